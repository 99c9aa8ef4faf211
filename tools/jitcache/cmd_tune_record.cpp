// `jitcache tune RECORD --runner CMD`: tunes the problems a record holds, each by a run of the
// application's runner, several at once.
#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/progress.hpp"
#include "tools/jitcache/record_file.hpp"
#include "tools/jitcache/shell_command.hpp"

#include "core/record/request_record.hpp"

#include <jitcache/tuning.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace jitcache::cli {

using detail::Stopwatch;

namespace {

// One problem of the record: its line (the runner's input) and where it is.
struct Item {
  std::string line;
  std::size_t number = 0;
  tuning::RecordedProblem problem;
};

struct Done {
  bool failed = true;
  nlohmann::json choice; ///< the runner's choice line
  std::string error;     ///< when failed: why, one line
  double seconds = 0;
};

// "family name=value,..." of an item's problem: its progress line and its failure.
std::string problem_text(const Item& item) {
  return item.problem.family + " " + pairs_text(item.problem.problem, "{}");
}

// "name=value,..." of the parameters a successful run chose.
std::string chosen_text(const Done& done) {
  return pairs_text(done.choice.at("parameters").get<std::map<std::string, std::string>>(), "{}");
}

// The tuning problems of `file`, each once (by family, version, problem and backend), in file
// order; a line that is neither a problem nor a kernel request is a warning naming FILE:LINE.
Expected<std::vector<Item>> read_problems(const std::string& file) {
  std::vector<Item> items;
  std::set<std::string> seen;
  auto read = each_record_line(file, [&](const std::string& line, std::size_t number) {
    auto problem = tuning::read_problem(line);
    if (!problem) {
      if (!detail::decode_request(line)) // else a kernel request's, for `jitcache warm`
        skip_record_line(file, number, problem.error().message);
      return;
    }
    const std::string id = nlohmann::json({problem->family, problem->family_version,
                                           problem->problem, problem->backend})
                               .dump();
    if (seen.insert(id).second)
      items.push_back({line, number, std::move(*problem)});
  });
  if (!read)
    return std::move(read).error();
  return items;
}

// The runner's environment: this one's, with JITCACHE_TUNE set to `mode` and without
// JITCACHE_RECORD (a runner's problems are the record's own).
std::vector<std::string> runner_environment(const std::string& mode) {
  std::vector<std::string> out;
  for (char** var = environ; *var; ++var) {
    const std::string entry = *var;
    if (entry.rfind("JITCACHE_TUNE=", 0) != 0 && entry.rfind("JITCACHE_RECORD=", 0) != 0)
      out.push_back(entry);
  }
  out.push_back("JITCACHE_TUNE=" + mode);
  return out;
}

// Whether `json` is a choice line: an object whose "parameters" map names to strings and whose
// "origin" is a string.
bool is_choice(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("parameters") || !json["parameters"].is_object() ||
      !json.contains("origin") || !json["origin"].is_string())
    return false;
  const auto& parameters = json["parameters"];
  return std::all_of(parameters.begin(), parameters.end(),
                     [](const nlohmann::json& value) { return value.is_string(); });
}

// Runs the runner on one problem: its last line that is a choice is the answer; without one, or
// with a failing exit, its last line says why.
Done tune_one(const TuneRecordOptions& options, const Item& item,
              const std::vector<std::string>& environment) {
  const Stopwatch clock;
  Done done;
  std::optional<std::chrono::milliseconds> limit;
  if (options.timeout > 0)
    limit = std::chrono::milliseconds(static_cast<long long>(options.timeout * 1000));
  auto ran = run_shell_command(options.runner, item.line + "\n", environment, limit);
  done.seconds = clock.ms() / 1000;
  if (!ran) {
    done.error = ran.error().message;
    return done;
  }
  std::string last;
  std::istringstream lines(ran->output);
  for (std::string line; std::getline(lines, line);) {
    auto json = nlohmann::json::parse(line, nullptr, false);
    if (is_choice(json))
      done.choice = std::move(json);
    else if (!line.empty())
      last = line;
  }
  if (ran->timed_out)
    done.error = "the runner was killed after --timeout " + seconds_text(options.timeout);
  else if (ran->exit_code != 0)
    done.error = "the runner exited with status " + std::to_string(ran->exit_code) +
                 (last.empty() ? "" : ": " + last);
  else if (done.choice.is_null())
    done.error = "the runner printed no choice (jitcache::tuning::choice_line)" +
                 (last.empty() ? "" : std::string(": ") + last);
  else
    done.failed = false;
  return done;
}

std::string ms_text(const nlohmann::json& value) {
  if (!value.is_number())
    return "-";
  char out[32];
  std::snprintf(out, sizeof out, "%.3f", value.get<double>());
  return out;
}

} // namespace

int run_tune_record(const TuneRecordOptions& options, const Output& out) {
  if (options.runner.empty())
    return usage_error("tune RECORD needs --runner CMD: the application's program that tunes "
                       "the problem given on its standard input");
  if (!std::set<std::string>{"missing", "all", "retune"}.count(options.mode))
    return usage_error("--mode " + options.mode + ": expected missing, all or retune");
  auto items = read_problems(options.record);
  if (!items)
    return fail(items.error());
  if (items->empty()) {
    std::cerr << "jitcache: warning: " << options.record << " holds no tuning problem\n";
    return 0;
  }
  const std::vector<std::string> environment = runner_environment(options.mode);
  const std::size_t jobs =
      std::max<std::size_t>(1, options.jobs > 0 ? static_cast<std::size_t>(options.jobs)
                                                : std::thread::hardware_concurrency());
  std::vector<Done> results(items->size());
  const Stopwatch clock;
  {
    Progress progress(items->size(), out);
    std::atomic<std::size_t> next{0};
    const auto work = [&] {
      for (std::size_t i; (i = next++) < items->size();) {
        const Item& item = (*items)[i];
        const std::string what = problem_text(item);
        progress.begin(what);
        results[i] = tune_one(options, item, environment);
        const Done& done = results[i];
        const nlohmann::json line = {
            {"line", item.number},
            {"family", item.problem.family},
            {"problem", item.problem.problem},
            {"outcome", done.failed ? "failed" : "ok"},
            {"choice", done.choice},
            {"seconds", done.seconds},
            {"error", done.failed ? nlohmann::json(done.error) : nlohmann::json()}};
        progress.report(
            done.failed, line,
            what + ": " +
                (done.failed ? "failed (" + done.error + ")"
                             : chosen_text(done) + " (" + done.choice.value("origin", "?") + ")"),
            what);
      }
    };
    std::vector<std::thread> workers;
    for (std::size_t t = 1; t < std::min(jobs, items->size()); ++t)
      workers.emplace_back(work);
    work();
    for (std::thread& worker : workers)
      worker.join();
    progress.finish();
  }

  std::vector<std::string> failures;
  if (!out.json()) {
    char line[256];
    std::snprintf(line, sizeof line, "%-16s %-24s %-20s %-9s %9s %10s %9s", "family", "problem",
                  "parameters", "origin", "best ms", "default ms", "seconds");
    std::cout << line << '\n';
  }
  for (std::size_t i = 0; i < items->size(); ++i) {
    const Item& item = (*items)[i];
    const Done& done = results[i];
    if (done.failed) {
      failures.push_back(options.record + ":" + std::to_string(item.number) + ": " +
                         problem_text(item) + ": " + done.error);
      continue;
    }
    if (out.json())
      continue; // the progress lines said it
    const std::string parameters = chosen_text(done);
    char line[512];
    std::snprintf(line, sizeof line, "%-16s %-24s %-20s %-9s %9s %10s %9.1f",
                  item.problem.family.c_str(), pairs_text(item.problem.problem, "{}").c_str(),
                  parameters.c_str(), done.choice.value("origin", "?").c_str(),
                  ms_text(done.choice.value("best_ms", nlohmann::json())).c_str(),
                  ms_text(done.choice.value("default_ms", nlohmann::json())).c_str(), done.seconds);
    std::cout << line << '\n';
  }
  if (!out.json())
    std::cout << items->size() << " problems in " << seconds_text(clock.ms() / 1000) << " with "
              << std::min(jobs, items->size()) << " jobs\n";
  for (const std::string& failure : failures)
    std::cerr << "jitcache: error: tune failed: " << failure << '\n';
  return failures.empty() ? 0 : 1;
}

} // namespace jitcache::cli
