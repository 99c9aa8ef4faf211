#include <jitcache/stats.hpp>

#include <cstring>

namespace jitcache {

std::uint64_t Stats::get(const std::string& backend, const std::string& name) const {
  auto b = by_backend.find(backend);
  if (b == by_backend.end())
    return 0;
  auto c = b->second.find(name);
  return c == b->second.end() ? 0 : c->second;
}

std::uint64_t Stats::hits(const std::string& backend) const {
  auto b = by_backend.find(backend);
  if (b == by_backend.end())
    return 0;
  std::uint64_t sum = 0;
  const std::size_t prefix = std::strlen(counter::hits_prefix);
  for (const auto& [name, value] : b->second)
    if (name.compare(0, prefix, counter::hits_prefix) == 0)
      sum += value;
  return sum;
}

void Stats::add(const std::string& backend, const std::string& name, std::uint64_t amount) {
  by_backend[backend][name] += amount;
}

void Stats::merge(const Stats& other) {
  for (const auto& [backend, counters] : other.by_backend)
    for (const auto& [name, value] : counters)
      add(backend, name, value);
}

} // namespace jitcache
