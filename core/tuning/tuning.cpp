// The tuning database (include/jitcache/tuning.hpp): lookup, tune and the modes.
#include <jitcache/tuning.hpp>

#include "core/engine/cache_core.hpp"
#include "core/engine/compile_lease.hpp"
#include "core/record/request_log.hpp"
#include "core/support/clock.hpp"
#include "core/support/log.hpp"
#include "core/tiers/packages/package_store.hpp"
#include "core/tuning/measuring_lock.hpp"
#include "core/tuning/tuning_problem_line.hpp"
#include "core/tuning/tuning_record.hpp"

#include <jitcache/version.hpp>

#include <algorithm>
#include <mutex>
#include <set>

namespace jitcache::tuning {

using detail::CacheDir;
using detail::CompileLease;
using detail::MeasuringLock;
using detail::Stopwatch;

namespace {

// How long past its time limit a tuner may go before a waiting process tunes too: the default
// is measured whatever the limit, and the candidate running when it passes finishes.
constexpr std::chrono::seconds k_lease_margin{30};

// `parameters` restricted to the family's names, the default's value for each one missing.
Parameters complete(const Family& family, const Parameters& parameters) {
  Parameters out;
  for (const std::string& name : family.parameters) {
    if (auto it = parameters.find(name); it != parameters.end())
      out.emplace(name, it->second);
    else if (auto d = family.defaults.find(name); d != family.defaults.end())
      out.emplace(name, d->second);
  }
  return out;
}

bool covers(const Family& family, const Parameters& parameters) {
  return std::all_of(family.parameters.begin(), family.parameters.end(),
                     [&](const std::string& name) { return parameters.count(name) > 0; });
}

std::string describe(const Parameters& parameters) {
  std::string out;
  for (const auto& [name, value] : parameters)
    out += (out.empty() ? "" : ",") + name + "=" + value;
  return out.empty() ? "{}" : out;
}

std::string what(const Family& family, const Problem& problem) {
  return "tuning " + family.name + " for " + describe(problem);
}

// The user tier's record under `key`, verified; nullopt when there is none, when it is damaged
// (counted as corrupt, one warning per record per process) or when the tier fails (skipped from
// then on).
std::optional<Record> stored_record(detail::CacheCore& core, const std::string& backend,
                                    const Digest& key, std::string_view fields = {}) {
  auto user = core.usable_user_tier(backend);
  if (!user)
    return std::nullopt;
  std::optional<Expected<Record>> decoded;
  auto seen = user->visit_tuning(
      key, [&](std::string_view bytes) { decoded.emplace(decode_record(key, bytes, fields)); });
  if (!seen) {
    core.user_tier_failed(seen.error());
    return std::nullopt;
  }
  if (!decoded)
    return std::nullopt;
  if (!*decoded) {
    core.count(k_tuning_backend, Counter::corrupt);
    log::write_once(LogLevel::warn, "tuning-corrupt:" + key.hex(),
                    decoded->error().message + " (key " + key.hex().substr(0, 16) +
                        "); not using it");
    return std::nullopt;
  }
  return std::move(**decoded);
}

// A stored record this family can use: one with a value for every declared parameter.
std::optional<Record> usable_record(detail::CacheCore& core, const Family& family,
                                    const Device& device, const Digest& key,
                                    std::string_view fields = {}) {
  auto record = stored_record(core, device.backend, key, fields);
  if (record && !covers(family, record->parameters))
    return std::nullopt;
  return record;
}

Choice from_record(const Family& family, Record record, Origin origin = Origin::user) {
  Choice choice{complete(family, record.parameters), origin, std::move(record)};
  return choice;
}

// The first record under `key` that this family can use in the packages' tiers (the embedded
// tier, then the system tier: the kernels' lookup order), as a choice of origin embedded or
// system. A damaged entry the package tier counts itself; a record that is not one is counted
// corrupt here, with one warning per record per process.
std::optional<Choice> package_choice(detail::CacheCore& core, const Family& family,
                                     const Digest& key, std::string_view fields) {
  for (const detail::Tier* tier : core.tier_set().packages()) {
    const auto& packages = tier->packages;
    std::optional<Expected<Record>> decoded;
    auto seen = packages->visit(
        key, [&](const EntryView& view) { decoded.emplace(decode_record(key, view, fields)); });
    if (!seen || !decoded)
      continue;
    if (!*decoded) {
      core.count(k_tuning_backend, Counter::corrupt);
      log::write_once(LogLevel::warn, "tuning-corrupt:" + packages->name() + key.hex(),
                      "the " + packages->name() + " tier's " + decoded->error().message + " (key " +
                          key.hex().substr(0, 16) + "); not using it");
      continue;
    }
    if (covers(family, (*decoded)->parameters))
      return from_record(family, std::move(**decoded),
                         packages->name() == "embedded" ? Origin::embedded : Origin::system);
  }
  return std::nullopt;
}

// lookup() without counting.
Choice answer(detail::CacheCore& core, const Family& family, const Problem& problem,
              const Device& device) {
  const std::string fields = identity_fields(family, problem, device);
  if (auto record = usable_record(core, family, device, Digest::of(fields), fields))
    return from_record(family, std::move(*record));
  if (auto packaged = package_choice(core, family, Digest::of(fields), fields))
    return std::move(*packaged);
  if (family.heuristic)
    if (auto guess = family.heuristic(problem, device))
      return {complete(family, *guess), Origin::heuristic, std::nullopt};
  return {complete(family, family.defaults), Origin::declared, std::nullopt};
}

// Appends the problem to the request record (JITCACHE_RECORD), once per process.
void record_problem(const Cache& cache, const Family& family, const Problem& problem,
                    const Device& device, const std::vector<Parameters>& candidates) {
  if (cache.config().record.empty())
    return;
  detail::record_tuning_problem(cache.config(), record_key(family, problem, device), [&] {
    return encode_problem_line(family, problem, device, candidates);
  });
}

struct Measured {
  Parameters parameters;
  double ms = 0;
  std::optional<std::string> output;
  Trial trial; ///< kept for the runoff
};

double median(std::vector<double> times) {
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

// Times `trials` holding the device's measuring lock: each one's warm-up, then the repeats in
// rounds of one run of each (alternated, so that a drift of the device's clocks or load falls on
// all alike); the median of each. Adds the time spent waiting for the lock to `*waited_ms`.
Expected<std::vector<double>> time_runs(const std::vector<const Trial*>& trials,
                                        const Device& device, const TuneOptions& options,
                                        const std::optional<CacheDir>& leases, double* waited_ms) {
  const detail::ClockStopwatch waiting;
  const MeasuringLock measuring(leases, device);
  *waited_ms += waiting.ms();
  for (const Trial* trial : trials)
    for (int i = 0; i < options.warmup; ++i)
      if (auto ran = trial->run(); !ran)
        return std::move(ran).error();
  std::vector<std::vector<double>> times(trials.size());
  for (int i = 0; i < std::max(1, options.repeats); ++i)
    for (std::size_t t = 0; t < trials.size(); ++t) {
      const detail::ClockStopwatch watch;
      if (auto ran = trials[t]->run(); !ran)
        return std::move(ran).error();
      times[t].push_back(watch.ms());
    }
  std::vector<double> out;
  for (auto& runs : times)
    out.push_back(median(std::move(runs)));
  return out;
}

// Prepares `parameters`, then times its runs (warm-up, then the median of the repeats).
Expected<Measured> measure(const Family& family, const Device& device, const Parameters& parameters,
                           const Trials& trials, const TuneOptions& options,
                           const std::optional<CacheDir>& leases, double* waited_ms) {
  auto trial = trials.prepare(parameters, defines(family, parameters));
  if (!trial)
    return std::move(trial).error();
  if (!trial->run)
    return Error(ErrorCode::invalid_argument, "prepare gave a trial without run");
  auto ms = time_runs({&*trial}, device, options, leases, waited_ms);
  if (!ms)
    return std::move(ms).error();
  Measured m{parameters, ms->front(), std::nullopt, std::move(*trial)};
  if (m.trial.output)
    m.output = m.trial.output();
  return m;
}

bool acceptable(const Trials& trials, const Measured& reference, const Measured& candidate) {
  if (!reference.output || !candidate.output)
    return true;
  if (trials.check)
    return trials.check(*reference.output, *candidate.output);
  return *reference.output == *candidate.output;
}

// Measures the default, then every other candidate within the time limit (not counting the
// waits for the device's measuring lock, which other tunings hold); the fastest wins if it beats
// the default in the runoff.
Expected<Record> measure_all(const Family& family, const Problem& problem, const Device& device,
                             const Trials& trials, const TuneOptions& options,
                             const std::optional<CacheDir>& leases) {
  const detail::ClockStopwatch clock;
  double waited_ms = 0;
  std::vector<Parameters> queue{complete(family, family.defaults)};
  for (const Parameters& candidate : trials.candidates)
    if (Parameters p = complete(family, candidate);
        std::find(queue.begin(), queue.end(), p) == queue.end())
      queue.push_back(std::move(p));
  auto reference = measure(family, device, queue.front(), trials, options, leases, &waited_ms);
  if (!reference)
    return Error(reference.error().code,
                 what(family, problem) + ": the default parameters (" + describe(queue.front()) +
                     ") failed: " + reference.error().message,
                 reference.error().log);
  Measured best = *reference;
  Record record;
  record.candidates = 1;
  for (std::size_t i = 1; i < queue.size(); ++i) {
    if (clock.ms() - waited_ms > static_cast<double>(options.time_limit.count())) {
      log::info(what(family, problem) + ": time limit of " +
                std::to_string(options.time_limit.count()) + " ms reached; " +
                std::to_string(queue.size() - i) + " candidate(s) not tried");
      break;
    }
    auto measured = measure(family, device, queue[i], trials, options, leases, &waited_ms);
    if (!measured) {
      ++record.skipped;
      log::info(what(family, problem) + ": skipping " + describe(queue[i]) + ": " +
                measured.error().message);
      continue;
    }
    if (!acceptable(trials, *reference, *measured)) {
      ++record.skipped;
      log::warn(what(family, problem) + ": skipping " + describe(queue[i]) +
                ": its result differs from the default's");
      continue;
    }
    ++record.candidates;
    if (measured->ms < best.ms)
      best = std::move(*measured);
  }
  // The runoff: the fastest and the default again, alternated. Each was timed alone, the default
  // first (a GPU may not have reached its clocks then), so the fastest is kept only if it still
  // beats the default side by side: the choice recorded is never slower than the default there.
  double default_ms = reference->ms;
  if (best.parameters != reference->parameters) {
    auto again = time_runs({&reference->trial, &best.trial}, device, options, leases, &waited_ms);
    if (!again) {
      log::warn(what(family, problem) + ": the runoff of " + describe(best.parameters) +
                " against the default failed (" + again.error().message + "); the default is kept");
      best = *reference;
    } else {
      default_ms = (*again)[0];
      best.ms = (*again)[1];
      if (best.ms >= default_ms) {
        log::info(what(family, problem) + ": " + describe(best.parameters) +
                  " was not faster than the default side by side; the default is kept");
        best = *reference;
        best.ms = default_ms;
      }
    }
  }
  record.family = family.name;
  record.family_version = family.version;
  record.problem = problem;
  record.device = device;
  record.parameters = best.parameters;
  record.best_ms = best.ms;
  record.default_ms = default_ms;
  record.method = Method::tuned;
  record.when = detail::clock().wall_ns() / 1'000'000'000;
  record.jitcache_version = k_version;
  return record;
}

// Problems retuned by this process, by user tier: retune tunes each once.
std::mutex g_retuned_mutex;
std::set<std::pair<std::string, Digest>> g_retuned;

bool first_retune(const Cache& cache, const Digest& key) {
  std::lock_guard<std::mutex> lock(g_retuned_mutex);
  return g_retuned.emplace(cache.config().cache_dir.string(), key).second;
}

} // namespace

const char* to_string(Origin origin) noexcept {
  switch (origin) {
  case Origin::user:
    return "user";
  case Origin::system:
    return "system";
  case Origin::embedded:
    return "embedded";
  case Origin::heuristic:
    return "heuristic";
  case Origin::declared:
    return "declared";
  }
  return "unknown";
}

const char* to_string(Method method) noexcept {
  switch (method) {
  case Method::tuned:
    return "tuned";
  case Method::system:
    return "system";
  }
  return "unknown";
}

std::string defines(const Family& family, const Parameters& parameters) {
  std::string out;
  for (const std::string& name : family.parameters)
    if (auto it = parameters.find(name); it != parameters.end())
      out += (out.empty() ? "-D " : " -D ") + name + "=" + it->second;
  return out;
}

Choice lookup(Cache& cache, const Family& family, const Problem& problem, const Device& device) {
  auto& core = detail::core_of(cache);
  record_problem(cache, family, problem, device, {});
  Choice choice = answer(core, family, problem, device);
  core.count_hits(k_tuning_backend, to_string(choice.origin));
  return choice;
}

namespace {

// tune(); with `replace` false, a record found while waiting for another tuner (or before) is
// the answer, with `replace` true only one that differs from what the user tier had before.
Expected<Choice> tune_problem(Cache& cache, const Family& family, const Problem& problem,
                              const Device& device, const Trials& trials,
                              const TuneOptions& options, bool replace) {
  if (!trials.prepare)
    return Error(ErrorCode::invalid_argument, what(family, problem) + ": no prepare function");
  if (!covers(family, family.defaults))
    return Error(ErrorCode::invalid_argument,
                 what(family, problem) + ": the family has no default for every parameter");
  auto& core = detail::core_of(cache);
  const Digest key = record_key(family, problem, device);
  auto user = core.usable_user_tier(device.backend);
  const bool keep = user && core.user_tier_writes();
  std::optional<CacheDir> leases; // where the compile lease and the measuring lock are
  if (keep)
    if (auto dir = user->lease_dir())
      leases = std::move(*dir);
  std::unique_ptr<CompileLease> lease;
  if (keep) {
    std::string before_bytes; // what another tuner's record must differ from
    if (replace)
      if (const auto before = stored_record(core, device.backend, key))
        before_bytes = encode_record(*before);
    std::optional<Record> theirs;
    const auto ready = [&] {
      theirs = usable_record(core, family, device, key);
      return theirs && encode_record(*theirs) != before_bytes;
    };
    CompileLease::Options lease_options;
    lease_options.duration = options.time_limit + k_lease_margin;
    if (!options.wait)
      lease_options.max_wait = std::chrono::milliseconds(0);
    auto acquired = leases ? CompileLease::acquire(*leases, key, ready, lease_options)
                           : Expected<std::unique_ptr<CompileLease>>(user->lease_dir().error());
    if (!acquired)
      log::write_once(LogLevel::warn, "tuning-lease:" + acquired.error().message,
                      acquired.error().message + "; tuning without waiting for other processes");
    else if (!*acquired)
      return theirs && encode_record(*theirs) != before_bytes
                 ? from_record(family, std::move(*theirs))
                 : lookup(cache, family, problem, device); // another is tuning: not waiting
    else
      lease = std::move(*acquired);
  } else {
    log::write_once(LogLevel::warn, "tuning-not-kept:" + cache.config().cache_dir.string(),
                    "no writable user tier for " + device.backend +
                        ": tuning results are measured but not kept");
  }
  auto measured = measure_all(family, problem, device, trials, options, leases);
  if (!measured)
    return std::move(measured).error();
  std::optional<Record> record = as_stored(std::move(*measured));
  log::info(what(family, problem) + ": " + describe(record->parameters) + " " +
            std::to_string(record->best_ms) + " ms (default " + std::to_string(record->default_ms) +
            " ms)");
  if (keep) {
    if (auto put = user->put_tuning(key, encode_record(*record)); !put)
      log::write_once(LogLevel::warn, std::string("tuning-put:") + to_string(put.error().code),
                      "could not keep a tuning record: " + put.error().message);
    else
      core.count(k_tuning_backend, Counter::tuned);
  }
  return from_record(family, std::move(*record));
}

} // namespace

Expected<Choice> tune(Cache& cache, const Family& family, const Problem& problem,
                      const Device& device, const Trials& trials, const TuneOptions& options) {
  record_problem(cache, family, problem, device, trials.candidates);
  return tune_problem(cache, family, problem, device, trials, options, true);
}

Choice select(Cache& cache, const Family& family, const Problem& problem, const Device& device,
              const Trials& trials, std::optional<TuneMode> mode, const TuneOptions& options) {
  auto& core = detail::core_of(cache);
  record_problem(cache, family, problem, device, trials.candidates);
  const TuneMode m = mode.value_or(cache.config().tune);
  if (m == TuneMode::off)
    return lookup(cache, family, problem, device);
  const Digest key = record_key(family, problem, device);
  const auto user = core.usable_user_tier(device.backend);
  const bool writes = user && core.user_tier_writes();
  if (m == TuneMode::clean) {
    if (writes)
      if (auto removed = user->remove_tuning(key); !removed)
        core.user_tier_failed(removed.error());
    return lookup(cache, family, problem, device);
  }
  // Tuning what cannot be kept would tune again in every process.
  if (!writes)
    return lookup(cache, family, problem, device);
  if (m != TuneMode::retune || !first_retune(cache, key)) {
    if (auto record = usable_record(core, family, device, key)) {
      core.count_hits(k_tuning_backend, to_string(Origin::user));
      return from_record(family, std::move(*record));
    }
    // Missing: a package's record counts as tuned; all: only the user tier's does.
    if (m == TuneMode::missing)
      if (auto packaged =
              package_choice(core, family, key, identity_fields(family, problem, device))) {
        core.count_hits(k_tuning_backend, to_string(packaged->origin));
        return std::move(*packaged);
      }
  }
  auto tuned = tune_problem(cache, family, problem, device, trials, options, m == TuneMode::retune);
  if (tuned)
    return std::move(*tuned);
  log::write_once(LogLevel::warn, "tuning-failed:" + key.hex(),
                  tuned.error().message + "; using the untuned choice");
  return lookup(cache, family, problem, device);
}

} // namespace jitcache::tuning
