#include "core/cohort/cohort.hpp"

#include "core/engine/cache_core.hpp"
#include "core/engine/compile_slot.hpp"
#include "core/support/byte_io.hpp"
#include "core/support/log.hpp"
#include "core/tiers/entry_codec.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <iterator>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

namespace jitcache::cohort {

Exchange::~Exchange() = default;

} // namespace jitcache::cohort

namespace jitcache::detail {

namespace {

using cohort::Clock;

// A message from a provider: one per task it owes the receiver, in plan order.
constexpr char k_entry = 'E';
constexpr char k_failure = 'F';

std::string encode_holding(const Holding& holding) {
  std::string out;
  append_sized(out, holding.node);
  append_le(out, holding.compile_slots);
  append_le(out, static_cast<std::uint64_t>(holding.wants.size()));
  for (const Holding::Want& want : holding.wants) {
    out.append(reinterpret_cast<const char*>(want.key.bytes.data()), want.key.bytes.size());
    out += want.have ? '1' : '0';
  }
  return out;
}

std::optional<Holding> decode_holding(std::string_view in) {
  Holding holding;
  std::uint64_t count = 0;
  if (!take_sized(in, holding.node) || !take_le(in, holding.compile_slots) || !take_le(in, count) ||
      count > in.size())
    return std::nullopt;
  for (std::uint64_t i = 0; i < count; ++i) {
    Holding::Want want;
    if (in.size() < want.key.bytes.size() + 1)
      return std::nullopt;
    std::copy_n(in.data(), want.key.bytes.size(), want.key.bytes.begin());
    want.have = in[want.key.bytes.size()] == '1';
    in.remove_prefix(want.key.bytes.size() + 1);
    holding.wants.push_back(want);
  }
  return holding;
}

// This rank's host and the node whose user tier it writes: ranks of one host with the same user
// tier share it.
Holding holding_of(const Config& config) {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) != 0)
    host[0] = '\0';
  return Holding{std::string(host) + '\n' + config.cache_dir.string(),
                 CompileSlot::default_count(config.max_compiles),
                 {}};
}

// A request of this rank, on its way through the cohort.
struct Pending {
  Runtime* runtime = nullptr;
  std::optional<Key> key; ///< unset: the request failed before its key (error set)
  std::optional<Error> error;
  std::optional<Entry> entry; ///< the entry a tier of this rank holds, or this rank compiled
  bool supplied = false;      ///< another rank handed its entry over
};

} // namespace

std::vector<Task> plan_cohort(const std::vector<Holding>& ranks) {
  struct Seen {
    std::vector<int> asking;
    std::vector<int> holding;
  };
  std::map<Digest, Seen> keys; // ordered: every rank walks them alike
  for (int rank = 0; rank < static_cast<int>(ranks.size()); ++rank)
    for (const Holding::Want& want : ranks[rank].wants) {
      Seen& seen = keys[want.key];
      if (seen.asking.empty() || seen.asking.back() != rank)
        seen.asking.push_back(rank);
      if (want.have && (seen.holding.empty() || seen.holding.back() != rank))
        seen.holding.push_back(rank);
    }
  const int size = static_cast<int>(ranks.size());
  std::vector<std::size_t> load(ranks.size(), 0);
  // Per host: its compile slots (the fewest any of its ranks reports; 0 counts as no cap) and
  // the ranks given a compile so far.
  std::map<std::string_view, std::uint32_t> slots;
  for (const Holding& rank : ranks) {
    const std::uint32_t reported = rank.compile_slots ? rank.compile_slots : UINT32_MAX;
    auto [at, added] = slots.emplace(host_of(rank.node), reported);
    at->second = std::min(at->second, reported);
  }
  std::map<std::string_view, std::vector<int>> compiling;
  const auto may_compile = [&](int rank) {
    const std::string_view host = host_of(ranks[rank].node);
    const std::vector<int>& busy = compiling[host];
    return busy.size() < slots[host] || std::find(busy.begin(), busy.end(), rank) != busy.end();
  };
  std::vector<Task> tasks;
  std::size_t index = 0;
  for (auto& [key, seen] : keys) {
    Task task;
    task.key = key;
    task.compile = seen.holding.empty();
    std::vector<int> candidates = task.compile ? seen.asking : seen.holding;
    if (task.compile) {
      std::vector<int> placed;
      std::copy_if(candidates.begin(), candidates.end(), std::back_inserter(placed), may_compile);
      if (!placed.empty()) // else every asking host is full of compilers that did not ask
        candidates = std::move(placed);
    }
    // The rotation: among equally loaded candidates, the first at or after rank `index % size`.
    const auto order = [&](int rank) {
      return std::make_pair(load[rank], (rank - static_cast<int>(index % size) + size) % size);
    };
    task.provider = *std::min_element(candidates.begin(), candidates.end(),
                                      [&](int a, int b) { return order(a) < order(b); });
    load[task.provider] += task.compile ? ranks.size() + 1 : 1;
    if (task.compile && may_compile(task.provider)) {
      std::vector<int>& busy = compiling[host_of(ranks[task.provider].node)];
      if (std::find(busy.begin(), busy.end(), task.provider) == busy.end())
        busy.push_back(task.provider);
    }
    // A holder needs nothing sent, and its node's user tier is taken to have it.
    std::vector<std::string> nodes{ranks[task.provider].node};
    for (int rank : seen.holding)
      nodes.push_back(ranks[rank].node);
    for (int rank : seen.asking) {
      if (rank == task.provider ||
          std::find(seen.holding.begin(), seen.holding.end(), rank) != seen.holding.end())
        continue;
      task.receives.push_back(rank);
      if (std::find(nodes.begin(), nodes.end(), ranks[rank].node) == nodes.end()) {
        nodes.push_back(ranks[rank].node);
        task.stores.push_back(rank);
      }
    }
    tasks.push_back(std::move(task));
    ++index;
  }
  return tasks;
}

namespace {

class Cohort {
public:
  Cohort(Cache& cache, cohort::Exchange& exchange, const std::vector<Runtime*>& runtimes,
         const cohort::Options& options, cohort::Report& report)
      : m_cache(cache), m_core(core_of(cache)), m_exchange(exchange), m_options(options),
        m_report(report) {
    for (Runtime* runtime : runtimes)
      m_pending.push_back(Pending{runtime, {}, {}, {}, false});
    m_report.requests = runtimes.size();
  }

  std::vector<Expected<Answer>> run() {
    const auto deadline = [&] { return Clock::now() + m_options.timeout; };
    if (auto begun = m_exchange.begin(deadline()); !begun) {
      log::warn("the cohort did not start (" + begun.error().message + "); building alone");
      return finish();
    }
    Holding mine = holding_of(m_cache.config());
    for (Pending& request : m_pending) {
      prepare(request);
      if (request.key)
        mine.wants.push_back({request.key->digest, request.entry.has_value()});
    }
    auto all = m_exchange.allgather(encode_holding(mine), deadline());
    std::vector<Holding> ranks;
    if (all)
      for (const std::string& bytes : *all) {
        auto holding = decode_holding(bytes);
        if (!holding)
          break;
        ranks.push_back(std::move(*holding));
      }
    if (!all || ranks.size() != static_cast<std::size_t>(m_exchange.size())) {
      log::warn("the ranks did not agree (" +
                (all ? std::string("a rank's holding could not be read") : all.error().message) +
                "); building alone");
      m_exchange.end(Clock::now());
      return finish();
    }
    m_report.agreed = true;
    const std::vector<Task> tasks = plan_cohort(ranks);
    m_report.distinct = tasks.size();
    provide(tasks);
    receive(tasks, deadline());
    auto answers = finish();
    m_exchange.end(deadline());
    return answers;
  }

private:
  // The key of `request` and whether one of this rank's tiers has its entry (kept, to hand out).
  void prepare(Pending& request) {
    Runtime& runtime = *request.runtime;
    if (auto ok = runtime.check(); !ok) {
      request.error = std::move(ok).error();
      return;
    }
    auto probed = runtime.probe(); // the compiler the key is built with is the one compiling
    if (!probed) {
      request.error = std::move(probed).error();
      return;
    }
    auto target = runtime.select(probed->identity);
    if (!target) {
      request.error = std::move(target).error();
      return;
    }
    request.key =
        remembered_key(m_cache, runtime, probed->identity, *target).settle()->key; // cannot fail
    if (auto found = m_core.lookup(*request.key))
      request.entry = std::move(found->entry);
  }

  Pending* asked(const Digest& key) {
    for (Pending& request : m_pending)
      if (request.key && request.key->digest == key)
        return &request;
    return nullptr;
  }

  // Compiles or hands out what this rank owes, each sent as soon as it is ready.
  void provide(const std::vector<Task>& tasks) {
    const int me = m_exchange.rank();
    for (const Task& task : tasks) {
      if (task.provider != me)
        continue;
      Pending* request = asked(task.key);
      if (!request)
        continue; // cannot happen: a provider asked for its key
      std::string message;
      if (task.compile) {
        ++m_report.compiled;
        compile(*request);
      } else {
        ++m_report.shared;
      }
      if (request->entry) {
        message += k_entry;
        message += encode_entry(task.key, *request->entry);
      } else {
        const Error& error = *request->error;
        message += k_failure;
        append_sized(message, std::to_string(static_cast<int>(error.code)));
        append_sized(message, error.message);
        append_sized(message, error.log);
      }
      for (int rank : task.receives)
        if (auto sent = m_exchange.send(rank, message); !sent)
          log::warn("handing an entry to rank " + std::to_string(rank) +
                    " failed: " + sent.error().message);
    }
  }

  // The one compile of `request`'s key for the whole job, through the tiers' path (single
  // flight, the user tier's lease, the stores, the counters); its entry made at once, since it
  // is sent (a runtime that reads its binary later, OpenCL's, reads it now).
  void compile(Pending& request) {
    Runtime& runtime = *request.runtime;
    const Key& key = *request.key;
    Runtime::Handle handle;
    const Compiler compiler = [&]() -> Expected<Compiled> {
      if (m_options.before_compile)
        m_options.before_compile(key.digest.hex());
      auto compiled = runtime.compile(key, handle);
      if (!compiled || compiled->entry || !compiled->later)
        return compiled;
      auto entry = compiled->later();
      if (!entry)
        return std::move(entry).error();
      Compiled now;
      now.entry = std::move(*entry);
      return now;
    };
    BuildInfo info;
    const EntryReceiver keep = [&](const EntryView& entry) -> Expected<void> {
      request.entry = to_entry(entry);
      return {};
    };
    if (auto got = m_core.obtain(key, compiler, keep, info); !got)
      request.error = std::move(got).error();
  }

  // Takes what the others owe this rank, until `deadline`; what did not come is left to
  // serve_request (compiled here).
  void receive(const std::vector<Task>& tasks, Clock::time_point deadline) {
    const int me = m_exchange.rank();
    std::vector<int> gone; // providers that timed out: nothing more is awaited from them
    for (const Task& task : tasks) {
      if (std::find(task.receives.begin(), task.receives.end(), me) == task.receives.end())
        continue;
      Pending* request = asked(task.key);
      if (!request || std::find(gone.begin(), gone.end(), task.provider) != gone.end())
        continue;
      auto got = m_exchange.receive(task.provider, deadline);
      if (!got || !*got) {
        log::warn("rank " + std::to_string(task.provider) + " did not hand over " + task.key.hex() +
                  " in time" + (got ? "" : " (" + got.error().message + ")") +
                  "; compiling it here");
        gone.push_back(task.provider);
        continue;
      }
      const bool store = std::find(task.stores.begin(), task.stores.end(), me) != task.stores.end();
      take(*request, **got, store);
    }
  }

  void take(Pending& request, std::string_view message, bool store) {
    if (message.empty())
      return;
    const char kind = message.front();
    message.remove_prefix(1);
    if (kind == k_entry) {
      auto entry = decode_entry(request.key->digest, message);
      if (!entry) {
        log::warn("an entry handed over by the cohort is damaged (" + entry.error().message +
                  "); compiling it here");
        return;
      }
      ++m_report.received;
      request.supplied = true;
      m_core.adopt(*request.key, *entry, store);
      return;
    }
    std::string code, text, log;
    if (kind != k_failure || !take_sized(message, code) || !take_sized(message, text) ||
        !take_sized(message, log))
      return;
    request.error = Error(static_cast<ErrorCode>(std::stoi(code)), text, log);
  }

  // Each request through the pipeline: it finds its entry in memory (or a tier), or compiles.
  std::vector<Expected<Answer>> finish() {
    std::vector<Expected<Answer>> answers;
    for (Pending& request : m_pending) {
      if (request.error) {
        answers.emplace_back(*request.error);
        continue;
      }
      if (request.entry)
        m_core.adopt(*request.key, *request.entry, false);
      else if (!request.supplied)
        ++m_report.alone;
      answers.push_back(serve_request(m_cache, *request.runtime));
    }
    return answers;
  }

  Cache& m_cache;
  CacheCore& m_core;
  cohort::Exchange& m_exchange;
  const cohort::Options& m_options;
  cohort::Report& m_report;
  std::vector<Pending> m_pending;
};

} // namespace

std::vector<Expected<Answer>> serve_cohort(Cache& cache, cohort::Exchange& exchange,
                                           const std::vector<Runtime*>& runtimes,
                                           const cohort::Options& options, cohort::Report* report) {
  cohort::Report ignored;
  return Cohort(cache, exchange, runtimes, options, report ? *report : ignored).run();
}

} // namespace jitcache::detail
