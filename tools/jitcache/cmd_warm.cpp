#include "tools/jitcache/backend_table.hpp"
#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/progress.hpp"
#include "tools/jitcache/record_file.hpp"
#include "tools/jitcache/worker_pool.hpp"

#include "core/record/request_record.hpp"
#include "core/support/clock.hpp"
#include "core/tuning/tuning_problem_line.hpp"

#include <jitcache/cache.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace jitcache::cli {

using detail::Backend;
using detail::Stopwatch;

namespace {

namespace fs = std::filesystem;

// One request made again for one target.
struct Item {
  const detail::RequestRecord* record;
  std::size_t line; ///< the record's line in its file
  Backend* backend;
  std::string target; ///< empty: the recorded one (OpenCL: the --device)
};

struct Done {
  std::string outcome; ///< "hit", "compiled", "failed"
  std::string target;  ///< as built
  double seconds = 0;
  std::string error; ///< first line, when failed
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty())
      parts.push_back(part);
  return parts;
}

// How a request is named for people: its program name, else (OpenCL) its key.
std::string label(const detail::RequestRecord& record) {
  return record.name.empty() ? "key " + record.key.substr(0, 16) : record.name;
}

// The records of `file`, deduplicated by key, in file order, with the line each is on (in
// `lines`); each line that is not one is a warning naming FILE:LINE (when `warn`: a worker of
// another warm leaves them to it).
Expected<std::vector<detail::RequestRecord>>
read_records(const std::string& file, std::vector<std::size_t>& lines, bool warn) {
  std::vector<detail::RequestRecord> records;
  std::set<std::string> keys;
  auto read = each_record_line(file, [&](const std::string& line, std::size_t number) {
    auto record = detail::decode_request(line);
    if (!record && tuning::is_problem_line(line))
      return; // a tuning problem's, for `jitcache tune RECORD`
    if (auto known = record ? known_backend(record->backend) : Expected<void>(); !known)
      record = std::move(known).error();
    if (!record && warn)
      skip_record_line(file, number, record.error().message);
    else if (!record)
      return;
    else if (keys.insert(record->key).second) {
      records.push_back(std::move(*record));
      lines.push_back(number);
    }
  });
  if (!read)
    return std::move(read).error();
  return records;
}

// A private folder for the headers replays write (removed with everything in it).
class Scratch {
public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "jitcache-warm-XXXXXX").string();
    if (::mkdtemp(pattern.data()))
      m_path = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    if (!m_path.empty())
      fs::remove_all(m_path, ec);
  }
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

// Reports one request made again to `progress`.
void report(Progress& progress, const Item& item, const Done& done) {
  const detail::RequestRecord& record = *item.record;
  const nlohmann::json line = {
      {"file", label(record)},
      {"line", item.line},
      {"backend", record.backend},
      {"target", done.target},
      {"key", record.key},
      {"outcome", done.outcome},
      {"seconds", done.seconds},
      {"error", done.error.empty() ? nlohmann::json() : nlohmann::json(done.error)},
  };
  progress.report(done.outcome == "failed", line,
                  record.backend + " " + done.target + " " + label(record) + ": " + done.outcome +
                      (done.error.empty() ? "" : " (" + done.error + ")"),
                  label(record));
}

Done replay(Cache& cache, const Item& item, int device, const fs::path& scratch) {
  const Stopwatch clock;
  Done done;
  auto info = item.backend->replay(cache, *item.record, item.target, device, scratch);
  done.seconds = clock.ms() / 1000;
  if (!info) {
    done.outcome = "failed";
    done.target = item.target.empty() ? item.record->device : item.target;
    done.error = first_line(info.error().message);
    return done;
  }
  done.outcome = info->outcome == Outcome::hit ? "hit" : "compiled";
  done.target = info->device;
  return done;
}

// Says that `target` of --arch is refused and why, and that the rest is warmed.
void refuse(const std::string& target, const std::string& why, std::vector<std::string>& refused) {
  std::cerr << "jitcache: error: --arch " << target << ": " << why
            << "; the other targets are warmed\n";
  refused.push_back(target);
}

// The targets of `--arch` of some backend's kind, comma-separated; each other one is refused
// (added to `refused`, with a message).
std::string known_targets(const std::string& arch, std::vector<std::string>& refused) {
  std::string known;
  for (const std::string& target : split_list(arch)) {
    bool claimed = false;
    for (const char* name : k_backends)
      if (auto backend = find_backend(name); backend && (*backend)->claims_target(target))
        claimed = true;
    if (claimed)
      known += (known.empty() ? "" : ",") + target;
    else
      refuse(target,
             "unknown target (CUDA targets are sm_XY, HIP targets gfxNNN; `jitcache info` lists "
             "those the installed compilers support)",
             refused);
  }
  return known;
}

// The targets of `--arch` that `backend` warms for: those of its kind that its compiler
// supports; each it does not is refused (with the list of what it supports). Errors:
// invalid_argument when `arch` names targets but none of this backend's that it can warm.
Expected<std::vector<std::string>> targets_for(Backend& backend, const std::string& arch,
                                               std::vector<std::string>& refused) {
  std::vector<std::string> targets;
  for (const std::string& target : split_list(arch)) {
    if (!backend.claims_target(target))
      continue; // another backend's
    if (auto ok = backend.check_target(target); !ok)
      refuse(target, ok.error().message, refused);
    else
      targets.push_back(target);
  }
  if (!arch.empty() && targets.empty() && backend.name() != "opencl")
    return Error(ErrorCode::invalid_argument,
                 "--arch " + arch + " names no " + backend.name() + " target to warm");
  return targets;
}

// `jitcache warm` for one backend at a time, each in a process of its own (PoCL and comgr each
// bring an LLVM, and two cannot share a process). Returns the worst exit status.
int warm_each(const std::set<std::string>& names, const WarmOptions& options, const Output& out) {
  int status = 0;
  for (const std::string& name : names) {
    std::vector<std::string> args{"/proc/self/exe",
                                  "warm",
                                  options.record,
                                  "--backend",
                                  name,
                                  "--device",
                                  std::to_string(options.device)};
    for (const auto& [flag, value] :
         {std::pair<const char*, std::string>{"--arch", options.arch},
          {"--into", options.into},
          {"--jobs", options.jobs > 0 ? std::to_string(options.jobs) : ""}})
      if (!value.empty())
        args.insert(args.end(), {flag, value});
    if (out.json())
      args.emplace_back("--json");
    std::vector<char*> argv;
    for (std::string& arg : args)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::cout << std::flush;
    pid_t child = -1;
    if (::posix_spawn(&child, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
      return fail(Error(ErrorCode::runtime_error, "cannot start jitcache warm for " + name));
    int wait_status = 0;
    while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0)
      status = 1;
  }
  return status;
}

} // namespace

int run_warm(const Config& environment, const WarmOptions& options, const Output& out) {
  std::vector<std::size_t> lines;
  auto records = read_records(options.record, lines, !options.serve);
  if (!records)
    return fail(records.error());

  // The backends the work needs: --backend, else those of the record; one at a time.
  std::set<std::string> names;
  if (!options.backend.empty())
    names.insert(options.backend);
  else
    for (const auto& record : *records)
      names.insert(record.backend);
  // A target refused is named, and the others are warmed; the exit status says it.
  std::vector<std::string> refused;
  WarmOptions known = options;
  known.arch = known_targets(options.arch, refused);
  if (!options.arch.empty() && known.arch.empty())
    return fail(Error(ErrorCode::invalid_argument, "--arch " + options.arch + " names no target"));
  const int refusal = refused.empty() ? 0 : 1;
  if (names.size() > 1)
    return std::max(warm_each(names, known, out), refusal);
  if (names.empty()) {
    std::cerr << "jitcache: warning: " << options.record << " holds no request\n";
    return refusal;
  }
  auto backend = find_backend(*names.begin());
  if (!backend)
    return fail(backend.error());
  auto targets = targets_for(**backend, known.arch, refused);
  if (!targets)
    return fail(targets.error());

  std::vector<Item> items;
  std::vector<std::string> failures;
  for (std::size_t i = 0; i < records->size(); ++i) {
    const detail::RequestRecord& record = (*records)[i];
    if (record.backend != (*backend)->name())
      continue;
    if (targets->empty())
      items.push_back({&record, lines[i], backend->get(), ""});
    for (const std::string& target : *targets)
      items.push_back({&record, lines[i], backend->get(), target});
  }

  std::map<std::string, std::string> variables = environment.variables;
  variables.erase("JITCACHE_RECORD"); // the replays are not requests of an application
  variables["JITCACHE_OPENCL_STORE"] = "wait";
  // Warming fills the user tier (or --into) for export: an installed package's hit would count
  // as warmed and leave that tier without the entry.
  variables["JITCACHE_SYSTEM_PATH"] = ":";
  if (!options.into.empty())
    variables["JITCACHE_DIR"] = options.into;
  const Config config = Config::from_variables(variables);

  const std::size_t jobs =
      std::max<std::size_t>(1, options.jobs > 0 ? static_cast<std::size_t>(options.jobs)
                                                : std::thread::hardware_concurrency());
  // What a request made again answers: its outcome, target, seconds and error.
  const auto answer = [](const Done& done) {
    return nlohmann::json{{"outcome", done.outcome},
                          {"target", done.target},
                          {"seconds", done.seconds},
                          {"error", done.error}};
  };
  if (options.serve) { // a worker of the warm below: the items it is given, one at a time
    const Scratch scratch;
    Cache cache(config);
    return serve_items(items.size(), [&](std::size_t i) {
      return answer(replay(cache, items[i], options.device, scratch.path()));
    });
  }
  std::vector<Done> results(items.size());
  const Stopwatch clock;
  {
    Progress progress(items.size(), out);
    // Several jobs are worker processes running this command with --serve, given the targets
    // kept here (their refusals are said once, above).
    std::vector<std::string> argv{"/proc/self/exe",
                                  "warm",
                                  options.record,
                                  "--backend",
                                  (*backend)->name(),
                                  "--device",
                                  std::to_string(options.device),
                                  "--serve"};
    std::string kept;
    for (const std::string& target : *targets)
      kept += (kept.empty() ? "" : ",") + target;
    if (!kept.empty())
      argv.insert(argv.end(), {"--arch", kept});
    if (!options.into.empty())
      argv.insert(argv.end(), {"--into", options.into});
    WorkerPoolCalls calls;
    calls.done = [&](std::size_t i, const nlohmann::json& line) {
      results[i] = Done{line.value("outcome", "failed"), line.value("target", items[i].target),
                        line.value("seconds", 0.0), line.value("error", "")};
      report(progress, items[i], results[i]);
    };
    calls.given = [&](std::size_t i) { progress.begin(label(*items[i].record)); };
    calls.lost = [&](std::size_t i, const std::string& why) {
      results[i] = Done{
          "failed", items[i].target.empty() ? items[i].record->device : items[i].target, 0.0, why};
      report(progress, items[i], results[i]);
    };
    std::cout << std::flush;
    if (jobs < 2 || items.size() < 2 || run_in_workers(argv, jobs, items.size(), calls) == 0) {
      const Scratch scratch;
      Cache cache(config);
      for (std::size_t i = 0; i < items.size(); ++i) {
        progress.begin(label(*items[i].record));
        results[i] = replay(cache, items[i], options.device, scratch.path());
        report(progress, items[i], results[i]);
      }
      cache.flush(); // the OpenCL stores, before the scratch headers go
    }
    progress.finish();
  }

  // The summary: one row per backend and target.
  struct Row {
    std::size_t requests = 0, hits = 0, compiled = 0, failed = 0;
    double seconds = 0;
  };
  std::map<std::pair<std::string, std::string>, Row> rows;
  for (std::size_t i = 0; i < items.size(); ++i) {
    Row& row = rows[{items[i].record->backend, results[i].target}];
    ++row.requests;
    row.hits += results[i].outcome == "hit";
    row.compiled += results[i].outcome == "compiled";
    row.failed += results[i].outcome == "failed";
    row.seconds += results[i].seconds;
    if (results[i].outcome == "failed")
      failures.push_back(options.record + ":" + std::to_string(items[i].line) + ": " +
                         items[i].record->backend + " " + label(*items[i].record) + " for " +
                         results[i].target + ": " + results[i].error);
  }
  if (!out.json()) {
    char line[256];
    std::snprintf(line, sizeof line, "%-8s %-28s %8s %6s %8s %6s %9s", "backend", "target",
                  "requests", "hits", "compiled", "failed", "seconds");
    std::cout << line << '\n';
  }
  for (const auto& [id, row] : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "%-8s %-28s %8zu %6zu %8zu %6zu %9.2f", id.first.c_str(),
                  id.second.c_str(), row.requests, row.hits, row.compiled, row.failed, row.seconds);
    out.emit({{"backend", id.first},
              {"target", id.second},
              {"requests", row.requests},
              {"hits", row.hits},
              {"compiled", row.compiled},
              {"failed", row.failed},
              {"seconds", row.seconds}},
             line);
  }
  if (!out.json())
    std::cout << items.size() << " requests in " << seconds_text(clock.ms() / 1000) << " with "
              << std::min(jobs, std::max<std::size_t>(items.size(), 1)) << " jobs\n";
  for (const std::string& failure : failures)
    std::cerr << "jitcache: error: warm failed: " << failure << '\n';
  for (const std::string& target : refused)
    std::cerr << "jitcache: error: warm refused --arch " << target << " (see above)\n";
  return failures.empty() && refused.empty() ? 0 : 1;
}

} // namespace jitcache::cli
