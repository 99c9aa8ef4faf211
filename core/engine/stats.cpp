#include <jitcache/stats.hpp>

namespace jitcache {

const char* to_string(Counter counter) noexcept {
  switch (counter) {
  case Counter::misses:
    return "misses";
  case Counter::compiles:
    return "compiles";
  case Counter::compile_errors:
    return "compile_errors";
  case Counter::rejected:
    return "rejected";
  case Counter::corrupt:
    return "corrupt";
  case Counter::bytes_stored:
    return "bytes_stored";
  case Counter::saved_ns:
    return "saved_ns";
  case Counter::store_errors:
    return "store_errors";
  case Counter::evicted:
    return "evicted";
  case Counter::evicted_bytes:
    return "evicted_bytes";
  case Counter::dead_tiers:
    return "dead_tiers";
  case Counter::handed_over:
    return "handed_over";
  case Counter::tuned:
    return "tuned";
  case Counter::remote_writes:
    return "remote_writes";
  case Counter::remote_refused:
    return "remote_refused";
  case Counter::remote_down:
    return "remote_down";
  case Counter::warm_builds:
    return "warm_builds";
  }
  return "unknown";
}

namespace {

std::uint64_t value_of(const Stats& stats, const std::string& backend, const std::string& name) {
  auto b = stats.by_backend.find(backend);
  if (b == stats.by_backend.end())
    return 0;
  auto c = b->second.find(name);
  return c == b->second.end() ? 0 : c->second;
}

} // namespace

std::uint64_t Stats::get(const std::string& backend, Counter counter) const {
  return value_of(*this, backend, to_string(counter));
}

std::uint64_t Stats::hits(const std::string& backend, const std::string& tier) const {
  return value_of(*this, backend, k_hits_prefix + tier);
}

std::uint64_t Stats::hits(const std::string& backend) const {
  auto b = by_backend.find(backend);
  if (b == by_backend.end())
    return 0;
  std::uint64_t sum = 0;
  const std::string prefix = k_hits_prefix;
  for (const auto& [name, value] : b->second)
    if (name.compare(0, prefix.size(), prefix) == 0)
      sum += value;
  return sum;
}

void Stats::add(const std::string& backend, Counter counter, std::uint64_t amount) {
  by_backend[backend][to_string(counter)] += amount;
}

void Stats::add_hits(const std::string& backend, const std::string& tier, std::uint64_t amount) {
  by_backend[backend][k_hits_prefix + tier] += amount;
}

void Stats::merge(const Stats& other) {
  for (const auto& [backend, counters] : other.by_backend)
    for (const auto& [name, value] : counters)
      by_backend[backend][name] += value;
}

} // namespace jitcache
