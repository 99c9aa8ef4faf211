#pragma once

#include <jitcache/cache.hpp>
#include <jitcache/config.hpp>
#include <jitcache/digest.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/export.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

/// The tuning database: which parameters (tile sizes, work per item, ...) a kernel should use
/// for a problem on a device, measured once and kept in the user tier beside the kernels
/// (issue 15; MIOpen's performance database is the model). Backend-neutral: the application
/// compiles and runs its candidates itself, through the kernel cache, so every candidate is an
/// ordinary cache entry and tuning the same candidates for another problem compiles nothing.
namespace jitcache::tuning {

/// Parameter name -> value ({"TILE", "16"}). Ordered: equal maps encode and hash alike.
using Parameters = std::map<std::string, std::string>;
/// What a choice depends on besides the device, name -> value ({"M", "256"}, {"N", "256"}).
using Problem = std::map<std::string, std::string>;

/// The device and toolchain a measurement holds for. A record made for another identity (other
/// device, driver, runtime or jitcache version) never applies. Get one from the backend
/// (opencl::tuning_device); plain value type.
struct Device {
  std::string backend; ///< "opencl", "cuda", "hip": whose persistent tiers keep the records
  std::string name;    ///< for people (`jitcache tune list`); not part of the identity
  /// The identity: the device and toolchain fields of the backend's kernel key, in its order.
  std::vector<std::pair<std::string, std::string>> identity;
};

/// Where lookup() found its answer, in the order it looks.
enum class Origin {
  user,      ///< a record in the user tier
  system,    ///< a record in a system package (JITCACHE_SYSTEM_PATH)
  embedded,  ///< a record in a package linked into the application
  heuristic, ///< the family's heuristic
  declared,  ///< the family's declared default
};
/// "user", "system", "embedded", "heuristic", "declared". Never fails.
JITCACHE_EXPORT const char* to_string(Origin origin) noexcept;

/// How a record's parameters were found. Stored: you MUST keep each value's number.
enum class Method : std::uint8_t {
  tuned = 0,  ///< measured on this device by tune()
  system = 1, ///< measured elsewhere: copied into the user tier from a package (`jitcache import`)
};
/// "tuned", "system". Never fails.
JITCACHE_EXPORT const char* to_string(Method method) noexcept;
/// The application's guess for a problem on a device; nullopt when it has none. Must be
/// thread-safe when lookup() is called from several threads.
using Heuristic = std::function<std::optional<Parameters>(const Problem&, const Device&)>;

/// A tunable kernel, declared once by the application.
struct Family {
  std::string name; ///< unique within the application ("matmul")
  /// Bump it when the kernel changes: records measured for another version no longer apply.
  std::uint32_t version = 1;
  std::vector<std::string> parameters; ///< the names, in the order defines() writes them
  Parameters defaults;                 ///< the declared default: a value for every name
  Heuristic heuristic;                 ///< optional
};

/// A measured (or recorded) choice for one family, problem and device.
struct Record {
  std::string family;
  std::uint32_t family_version = 0;
  Problem problem;
  Device device;
  Parameters parameters; ///< the choice
  double best_ms = 0;    ///< median run time of the choice
  double default_ms = 0; ///< median run time of the declared default, measured beside it
  Method method = Method::tuned;
  std::int64_t when = 0;        ///< seconds since the epoch
  std::string jitcache_version; ///< of the jitcache that made it
  std::uint32_t candidates = 0; ///< candidates measured (the default included)
  std::uint32_t skipped = 0;    ///< candidates skipped (compile error, failed run, wrong answer)
};

/// lookup()'s answer.
struct Choice {
  Parameters parameters;
  Origin origin = Origin::declared;
  std::optional<Record> record; ///< the record it came from (origins user, system, embedded)
};

/// `parameters` as compiler options: "-D NAME=VALUE" for each of `family.parameters` that
/// `parameters` has, in that order, separated by single spaces. Never fails.
JITCACHE_EXPORT std::string defines(const Family& family, const Parameters& parameters);

/// The digest a record for `family` (name and version), `problem` and `device` (backend and
/// identity; not its name) is stored under: SHA-256 over length-delimited fields. Never fails.
JITCACHE_EXPORT Digest record_key(const Family& family, const Problem& problem,
                                  const Device& device);

/// The parameters to use for `problem` on `device`: the user tier's record, then the packages'
/// (embedded, then system: `jitcache export --backend tuning` makes such a package), then
/// `family.heuristic`, then `family.defaults`.
/// Answers whatever Config::tune says: it never tunes and never removes (see select()). A
/// record is used only when it was made for this family version, problem and device, and has a
/// value for every declared parameter (values for names no longer declared are dropped).
/// Never fails: a damaged record is a miss, counted as `corrupt` of backend "tuning" with one
/// warning per process; a failing user tier is skipped for the rest of the process (one
/// warning). Counts one hit per call of backend "tuning" by origin ("hits.user",
/// "hits.heuristic", "hits.declared"). Thread-safe; reads the user tier in one short read
/// transaction and allocates only the answer.
JITCACHE_EXPORT Choice lookup(Cache& cache, const Family& family, const Problem& problem,
                              const Device& device);

/// A candidate made ready to run (Trials::prepare).
struct Trial {
  /// Runs the candidate once, to completion (the launch and the wait for it). An error skips
  /// the candidate. Required.
  std::function<Expected<void>()> run;
  /// The result of the last run, as bytes, for Trials::check. Optional.
  std::function<std::string()> output;
};

/// What tuning a problem needs from the application. Callbacks are called on the calling
/// thread only, one at a time.
struct Trials {
  /// Parameter sets to try besides the family's declared default, which is always measured
  /// first as the reference. Names not declared by the family are dropped; missing ones take
  /// the default's value; duplicates are measured once.
  std::vector<Parameters> candidates;
  /// Compiles a candidate, normally through the kernel cache with `defines` added to the
  /// kernel's options (so that a candidate is an ordinary cache entry), and binds its
  /// arguments. An error skips the candidate (logged at info); an error for the default fails
  /// the tuning. Required.
  std::function<Expected<Trial>(const Parameters& parameters, const std::string& defines)> prepare;
  /// Whether a candidate's output is acceptable, given the default's output as the reference
  /// (both from Trial::output). Optional: without it the outputs must be equal byte for byte;
  /// without outputs every candidate that runs counts. A candidate refused is skipped and
  /// logged at warn.
  std::function<bool(std::string_view reference, std::string_view output)> check;
};

/// How tune() measures.
struct TuneOptions {
  int warmup = 1;  ///< untimed runs of each candidate first
  int repeats = 5; ///< timed runs; the median counts
  /// The most one problem's tuning may take, not counting waits for the device's measuring lock
  /// (the default is always measured, and the runoff always runs): candidates left when it has
  /// passed are not tried. Also how long other processes wait for this one.
  std::chrono::milliseconds time_limit = std::chrono::seconds(60);
  /// When another process (or thread) is tuning the same problem: true: wait for its record
  /// (at most its time limit); false: answer with lookup() at once.
  bool wait = true;
};

/// Tunes `problem` on `device` now, whatever Config::tune says: measures the declared default
/// and every candidate (warm-up, then repeats, median), skipping those that fail to prepare or
/// run or that `trials.check` refuses; then times the fastest and the default again, their runs
/// alternated (the runoff), and records the fastest only if it still beats the default there
/// (else the default), with both times of the runoff, in the user tier (Method::tuned; counted as
/// `tuned` of backend "tuning"). One process tunes a problem at a time: the others wait for its
/// record or, with `options.wait` false, get lookup()'s answer (a lease file in the user tier's
/// `leases/`, as for compiles; a tuner that dies is taken over at once, one that runs past its time
/// limit by one waiter). Returns the choice (origin user), or what the waiting found. A read-only
/// or absent user tier: the choice is measured and returned but not kept (one warning). Errors:
/// invalid_argument (no prepare, a family without a default for each parameter); the default's own
/// error when it cannot be prepared or run. Not to be called from inside `trials`' callbacks.
JITCACHE_EXPORT Expected<Choice> tune(Cache& cache, const Family& family, const Problem& problem,
                                      const Device& device, const Trials& trials,
                                      const TuneOptions& options = {});

/// What an application calls when it meets a problem: applies `mode` (Config::tune unless
/// given). off: lookup(). missing: the user tier's (or a package's) record, else tune() once.
/// all: the user tier's record, else tune() (the heuristic is not used). retune: tune() once
/// per problem per process, replacing the record, then the record. clean: removes the user
/// tier's record of the problem, then lookup(). A failed tuning falls back to lookup() with one
/// warning. Thread-safe, as lookup() and tune() are.
JITCACHE_EXPORT Choice select(Cache& cache, const Family& family, const Problem& problem,
                              const Device& device, const Trials& trials,
                              std::optional<TuneMode> mode = std::nullopt,
                              const TuneOptions& options = {});

/// A tuning problem as the request record holds it: with JITCACHE_RECORD set (Config::record),
/// lookup() and select() append one line per distinct family, problem and device a process
/// meets, beside its kernel requests, and `jitcache tune RECORD --runner CMD` hands each line to
/// a run of CMD on its standard input (one line, then end of file), to tune the problem on the
/// runner's device. A plain value type.
struct RecordedProblem {
  std::string family; ///< Family::name
  std::uint32_t family_version = 0;
  Problem problem;
  std::string backend; ///< the device's backend where it was met ("opencl")
  std::string device;  ///< the device's name where it was met (for people)
  /// select()'s Trials::candidates where it was met; empty when lookup() met it.
  std::vector<Parameters> candidates;
};

/// The problem of one such line (the newline optional). Errors: corrupt naming what is wrong
/// (not JSON, a kernel request's line, another line format version, a field missing or of the
/// wrong type).
JITCACHE_EXPORT Expected<RecordedProblem> read_problem(std::string_view line);

/// What a runner prints on its standard output for `jitcache tune RECORD` to report, one line
/// (no newline): a JSON object with `parameters` and `origin`, and from the choice's record
/// `method`, `best_ms`, `default_ms`, `candidates` and `skipped`. Never fails.
JITCACHE_EXPORT std::string choice_line(const Choice& choice);

} // namespace jitcache::tuning
