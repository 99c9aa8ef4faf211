// JITCACHE_OPENCL_STORE on PoCL: `wait` stores in the process; `detach` hands the stores to a
// detached `jitcache store` process (core/engine/store_handover), which a later process's hits
// show.
#include <jitcache/opencl.hpp>

#include "core/record/request_record.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/processes_naming.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/terminal.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace jitcache {
namespace {
using test::k_options;
using test::read_file;

namespace fs = std::filesystem;

const char* const k_kernels[] = {"vector_ops.cl", "reduce.cl", "stencil.cl"};

// The request files waiting in `pending` for a `jitcache store` process (not the store worker's
// lock, which stays).
std::vector<fs::path> request_files(const fs::path& pending) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(pending, ec))
    if (item.path().filename() != "worker.lock")
      files.push_back(item.path());
  return files;
}

// Pids of the `jitcache store` processes working in `pending`.
std::vector<pid_t> store_processes(const fs::path& pending) {
  std::vector<pid_t> pids;
  for (pid_t pid : test::processes_naming(pending.string(), false))
    if (read_file(fs::path("/proc") / std::to_string(pid) / "cmdline")
            .find(std::string("store") + '\0') != std::string::npos)
      pids.push_back(pid);
  return pids;
}

// Waits until `done()`. The detached store processes of `pending` run at idle priority, which
// on a busy machine means never: they are moved to the normal class (their nice value stays
// 19), which any process of the same user may do.
void wait_for_stores(const fs::path& pending, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
  while (!done()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the store process never finished";
    for (pid_t pid : store_processes(pending)) {
      sched_param param{};
      sched_setscheduler(pid, SCHED_OTHER, &param);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Waits until every request file in `pending` is done.
void wait_for_stores(const fs::path& pending) {
  wait_for_stores(pending, [&] { return request_files(pending).empty(); });
}

class StoreModeTest : public ::testing::Test {
protected:
  void SetUp() override {
    cl_platform_id platform = nullptr;
    ASSERT_EQ(clGetPlatformIDs(1, &platform, nullptr), CL_SUCCESS) << "PoCL must be installed";
    ASSERT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, nullptr);
    ASSERT_NE(context, nullptr);
  }
  void TearDown() override {
    if (context)
      clReleaseContext(context);
  }
  std::map<std::string, std::string> variables(const std::string& mode) {
    return {{"JITCACHE_DIR", dir.path().string()}, {"JITCACHE_OPENCL_STORE", mode}};
  }
  Config config(const std::string& mode) { return Config::from_variables(variables(mode)); }
  fs::path pending() const { return dir.path() / "v1" / "pending"; }
  // Builds every sample through `cache`; the outcomes, in order.
  std::vector<Outcome> build_all(Cache& cache) {
    std::vector<Outcome> outcomes;
    for (const char* name : k_kernels) {
      auto built = opencl::build_program(cache, context, device,
                                         read_file(fs::path(JITCACHE_KERNELS) / name), k_options);
      EXPECT_TRUE(built) << name << ": " << built.error().message;
      if (!built)
        return outcomes;
      clReleaseProgram(built->program);
      outcomes.push_back(built->info.outcome);
    }
    return outcomes;
  }
  std::vector<Outcome> all(Outcome outcome) {
    return std::vector<Outcome>(std::size(k_kernels), outcome);
  }
  std::uint64_t stored_counter(Counter counter) {
    auto out = test::run_cli({"stats", "--json"}, variables("wait"));
    EXPECT_EQ(out.exit_code, 0) << out.err;
    auto opencl = nlohmann::json::parse(out.out.substr(0, out.out.find('\n'))); // first: opencl
    EXPECT_EQ(opencl["backend"], "opencl");
    return opencl[to_string(counter)].get<std::uint64_t>();
  }

  test::TempDir dir;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
};

TEST(StoreModeConfig, DefaultIsDetachAndUnknownValuesWarnOnceAndFallBack) {
  EXPECT_EQ(Config::from_variables({}).opencl_store, StoreMode::detach);
  EXPECT_EQ(Config::from_variables({{"JITCACHE_OPENCL_STORE", "WAIT"}}).opencl_store,
            StoreMode::wait);
  EXPECT_EQ(Config::from_variables({{"JITCACHE_OPENCL_STORE", "detach"}}).opencl_store,
            StoreMode::detach);
  const Config bad = Config::from_variables({{"JITCACHE_OPENCL_STORE", "later"}});
  EXPECT_EQ(bad.opencl_store, StoreMode::detach);
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_EQ(bad.warnings[0], "JITCACHE_OPENCL_STORE=later: expected wait or detach; using detach");
}

TEST_F(StoreModeTest, WaitStoresInTheProcessBeforeFlushReturns) {
  {
    Cache cache(config("wait"));
    EXPECT_EQ(build_all(cache), all(Outcome::miss));
    cache.flush();
    const Stats stats = cache.session_stats();
    EXPECT_EQ(stats.get("opencl", Counter::compiles), std::size(k_kernels));
    EXPECT_EQ(stats.get("opencl", Counter::handed_over), 0u);
    EXPECT_GT(stats.get("opencl", Counter::bytes_stored), 0u);
  }
  EXPECT_FALSE(fs::exists(pending())) << "nothing is handed over";
  Cache again(config("wait"));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
}

TEST_F(StoreModeTest, DetachHandsTheStoresToAProcessThatOutlivesTheCache) {
  {
    Cache cache(config("detach"));
    EXPECT_EQ(build_all(cache), all(Outcome::miss));
    cache.flush();
    const Stats stats = cache.session_stats();
    EXPECT_EQ(stats.get("opencl", Counter::compiles), std::size(k_kernels));
    EXPECT_EQ(stats.get("opencl", Counter::handed_over), std::size(k_kernels));
    EXPECT_EQ(stats.get("opencl", Counter::bytes_stored), 0u) << "this process stores nothing";
  }
  wait_for_stores(pending());
  EXPECT_GT(stored_counter(Counter::bytes_stored), 0u) << "stored by the detached process";
  EXPECT_EQ(stored_counter(Counter::misses), std::size(k_kernels))
      << "the detached process's builds are not misses";
  Cache again(config("detach"));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
  EXPECT_EQ(again.session_stats().get("opencl", Counter::compiles), 0u);
}

TEST_F(StoreModeTest, AReadOnlyCacheHandsNothingOver) {
  { Cache create(config("wait")); } // the user tier exists, empty
  auto vars = variables("detach");
  vars["JITCACHE_READONLY"] = "1";
  Cache cache(Config::from_variables(vars));
  EXPECT_EQ(build_all(cache), all(Outcome::miss));
  cache.flush();
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::handed_over), 0u);
  EXPECT_FALSE(fs::exists(pending()));
}

// A request as a process hands it over (the fields a hand-over fills).
detail::RequestRecord handed_over(const std::string& options, const std::string& directory,
                                  const std::string& source, const std::string& key,
                                  const std::map<std::string, std::string>& variables) {
  detail::RequestRecord record;
  record.backend = "opencl";
  record.options = {options};
  record.directory = directory;
  record.source = source;
  record.key = key;
  record.variables = variables;
  return record;
}

// A request file as a process hands it over, written here (no process started for it), its
// requests carrying `variables` (a hand-over writes none; an older jitcache wrote its own).
fs::path write_requests(const Config& config, cl_device_id device, const fs::path& file,
                        const std::map<std::string, std::string>& variables = {}) {
  std::ofstream out(file);
  for (const char* name : k_kernels) {
    const std::string source = read_file(fs::path(JITCACHE_KERNELS) / name);
    auto key = opencl::make_key(config, device, source, k_options);
    EXPECT_TRUE(key) << key.error().message;
    out << detail::encode_request(handed_over(k_options, fs::current_path().string(), source,
                                              key->digest.hex(), variables))
        << "\n";
  }
  return file;
}

TEST_F(StoreModeTest, KillingTheStoreProcessLeavesAHealthyCacheThatMissesWhatItDidNotStore) {
  const fs::path file = write_requests(config("detach"), device, dir.path() / "requests.jsonl");
  // `jitcache store` killed once it has stored the first request.
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string cli = JITCACHE_CLI, command = "store", json = "--json", target = file.string();
  char* argv[] = {cli.data(), command.data(), json.data(), target.data(), nullptr};
  std::vector<std::string> environment; // the store's settings come from its environment
  for (char** entry = environ; *entry; ++entry)
    environment.emplace_back(*entry);
  for (const auto& [name, value] : variables("wait"))
    environment.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : environment)
    envp.push_back(entry.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, cli.c_str(), &actions, nullptr, argv, envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string first;
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n')
    first += c;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(out[0]);
  ASSERT_FALSE(first.empty()) << "jitcache store printed nothing";
  EXPECT_EQ(nlohmann::json::parse(first)["outcome"], "stored") << first;

  auto verify = test::run_cli({"verify"}, variables("wait"));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  {
    Cache cache(config("wait")); // stores what the killed process did not
    const auto outcomes = build_all(cache);
    ASSERT_EQ(outcomes.size(), std::size(k_kernels));
    EXPECT_EQ(outcomes[0], Outcome::hit);
  }
  // The file is still there; storing it again finds everything present, and removes it.
  auto again = test::run_cli({"store", "--json", "--remove", file.string()}, variables("wait"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  std::istringstream lines(again.out);
  std::size_t present = 0;
  for (std::string line; std::getline(lines, line);)
    present += nlohmann::json::parse(line)["outcome"] == "present";
  EXPECT_EQ(present, std::size(k_kernels));
  EXPECT_FALSE(fs::exists(file));
}

// A store process that dies while making a request (here: killed by SIGXFSZ at its first
// write, as a runtime's fault would kill it) has already marked its file taken, so no later
// store process tries those requests again.
TEST_F(StoreModeTest, AStoreProcessThatDiesMidWayLeavesItsFileTakenNotToBeTriedAgain) {
  { Cache create(config("wait")); }
  const fs::path file = write_requests(config("detach"), device, dir.path() / "requests.jsonl");
  test::ChildProcess store([&] {
    const rlimit no_writes{0, 0};
    ::setrlimit(RLIMIT_FSIZE, &no_writes);
    for (const auto& [name, value] : variables("wait"))
      ::setenv(name.c_str(), value.c_str(), 1);
    std::string cli = JITCACHE_CLI, command = "store", remove = "--remove", target = file.string();
    char* argv[] = {cli.data(), command.data(), remove.data(), target.data(), nullptr};
    ::execv(cli.c_str(), argv);
    return 127;
  });
  EXPECT_EQ(store.wait(), 128 + SIGXFSZ) << store.err();
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(fs::exists(fs::path(file).replace_extension(".taken")));
  EXPECT_EQ(stored_counter(Counter::bytes_stored), 0u);
}

// What the store process of the next hand-over does with request files an hour old: one that
// no store process read (FILE.jsonl) is taken over and stored; one that a store process read
// and did not finish (FILE.taken: it died, maybe of one of its requests) is removed, never
// tried again.
TEST_F(StoreModeTest, AnHourOldUnreadFileIsTakenOverAndAnUnfinishedTakenOneIsRemoved) {
  { Cache create(config("wait")); } // the user tier and its folder
  fs::create_directories(pending());
  const fs::path unread = write_requests(config("detach"), device, pending() / "old.jsonl");
  const fs::path taken = write_requests(config("detach"), device, pending() / "dead.taken");
  const fs::path recent = write_requests(config("detach"), device, pending() / "recent.taken");
  const auto two_hours_ago = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(unread, two_hours_ago);
  fs::last_write_time(taken, two_hours_ago);
  {
    Cache cache(config("detach")); // a miss of its own, handed over with the stale file
    auto built = opencl::build_program(
        cache, context, device, read_file(fs::path(JITCACHE_KERNELS) / "nbody.cl"), k_options);
    ASSERT_TRUE(built) << built.error().message;
    clReleaseProgram(built->program);
  }
  // Until only the recent FILE.taken is left: a store process may still be at work on it.
  wait_for_stores(pending(),
                  [&] { return request_files(pending()) == std::vector<fs::path>{recent}; });
  EXPECT_FALSE(fs::exists(taken));
  EXPECT_FALSE(fs::exists(unread));
  Cache again(config("detach"));
  EXPECT_EQ(build_all(again), all(Outcome::hit)) << "the unread file's requests were stored";
}

TEST_F(StoreModeTest, ARequestWhoseFilesChangedIsDroppedNotStored) {
  test::TempDir kernels;
  fs::copy_file(fs::path(JITCACHE_KERNELS) / "common.h", kernels.path() / "common.h");
  const std::string source =
      "#include \"common.h\"\nkernel void k(global float* x) { x[0] = 1; }\n";
  const std::string options = "-I " + kernels.path().string();
  const Config cfg = config("detach");
  auto key = opencl::make_key(cfg, device, source, options);
  ASSERT_TRUE(key) << key.error().message;
  const fs::path file = dir.path() / "requests.jsonl";
  std::ofstream(file) << detail::encode_request(
                             handed_over(options, "/", source, key->digest.hex(), cfg.variables))
                      << "\n";
  std::ofstream(kernels.path() / "common.h", std::ios::app) << "// edited\n";
  auto stored = test::run_cli({"store", "--json", file.string()}, variables("wait"));
  ASSERT_EQ(stored.exit_code, 0) << stored.err;
  EXPECT_EQ(nlohmann::json::parse(stored.out)["outcome"], "dropped") << stored.out;
  EXPECT_EQ(stored_counter(Counter::bytes_stored), 0u);
}

TEST_F(StoreModeTest, CliBuildReportsUnknownBytesUntilStoredAndWaitsWithWait) {
  const std::string file = std::string(JITCACHE_KERNELS) + "/nbody.cl";
  auto waited = test::run_cli(
      {"build", "--backend", "opencl", "--options", k_options, "--json", "--wait", file},
      variables("detach"));
  ASSERT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_GT(nlohmann::json::parse(waited.out)["bytes"].get<std::uint64_t>(), 0u);
  EXPECT_FALSE(fs::exists(pending()));

  const std::string other = std::string(JITCACHE_KERNELS) + "/matmul.cl";
  auto handed =
      test::run_cli({"build", "--backend", "opencl", "--options", k_options, "--json", other},
                    variables("detach"));
  ASSERT_EQ(handed.exit_code, 0) << handed.err;
  const auto line = nlohmann::json::parse(handed.out);
  EXPECT_EQ(line["outcome"], "miss");
  EXPECT_TRUE(line["bytes"].is_null()) << handed.out;
  wait_for_stores(pending());
  auto hit =
      test::run_cli({"build", "--backend", "opencl", "--options", k_options, "--json", other},
                    variables("detach"));
  ASSERT_EQ(hit.exit_code, 0) << hit.err;
  EXPECT_EQ(nlohmann::json::parse(hit.out)["outcome"], "hit");
}

// Issue 29's row "`jitcache build` twice in a row", the samples: the outcomes of one run.
std::map<std::string, std::size_t>
cli_build_outcomes(const std::map<std::string, std::string>& env) {
  std::vector<std::string> args{"build", "--backend", "opencl", "--options", k_options, "--json"};
  for (const char* name : k_kernels)
    args.push_back(std::string(JITCACHE_KERNELS) + "/" + name);
  auto built = test::run_cli(args, env);
  EXPECT_EQ(built.exit_code, 0) << built.err;
  std::map<std::string, std::size_t> counts;
  for (const auto& line : test::json_lines(built.out))
    ++counts[line["outcome"].get<std::string>()];
  return counts;
}

using OutcomeCounts = std::map<std::string, std::size_t>;

TEST_F(StoreModeTest, CliBuildTwiceInARowWithWaitMissesThenHits) {
  const std::size_t n = std::size(k_kernels);
  EXPECT_EQ(cli_build_outcomes(variables("wait")), (OutcomeCounts{{"miss", n}}));
  EXPECT_EQ(cli_build_outcomes(variables("wait")), (OutcomeCounts{{"hit", n}}));
  EXPECT_EQ(stored_counter(Counter::compiles), n);
}

// In the default mode the second run starts while the first one's stores may still be pending:
// it compiles nothing (each program a hit, or a build over PoCL's cache the first run warmed:
// `warm_builds`); after `store --wait` a third run hits every program.
TEST_F(StoreModeTest, CliBuildTwiceInARowInTheDefaultModeCompilesOnceThenHitsAfterTheWait) {
  const std::size_t n = std::size(k_kernels);
  EXPECT_EQ(cli_build_outcomes(variables("detach")), (OutcomeCounts{{"miss", n}}));
  OutcomeCounts second = cli_build_outcomes(variables("detach"));
  EXPECT_EQ(second["hit"] + second["miss"], n);
  EXPECT_EQ(second["miss"], stored_counter(Counter::warm_builds))
      << "each miss a build over PoCL's warm cache";
  EXPECT_EQ(stored_counter(Counter::compiles), n) << "the second run compiles nothing";
  auto waited = test::run_cli({"store", "--wait", "--timeout", "240"}, variables("detach"));
  ASSERT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_EQ(cli_build_outcomes(variables("detach")), (OutcomeCounts{{"hit", n}}));
  EXPECT_EQ(stored_counter(Counter::compiles), n);
}

// A key's hand-over marker (leases/KEY.handed) says that PoCL's cache is warm from a compile
// whose store is pending; once the entry is stored it says nothing true any more, and it goes (a
// CI job saves the cache after `store --wait`). A later miss of the key, here the entry cleared
// and PoCL's cache empty (a new machine that restored the cache), is a real compile, counted so.
TEST_F(StoreModeTest, AStoredKeysHandOverMarkerGoesAndALaterMissCountsAsACompile) {
  const std::size_t n = std::size(k_kernels);
  EXPECT_EQ(cli_build_outcomes(variables("detach")), (OutcomeCounts{{"miss", n}}));
  auto waited = test::run_cli({"store", "--wait", "--timeout", "240"}, variables("detach"));
  ASSERT_EQ(waited.exit_code, 0) << waited.err;
  std::vector<fs::path> markers;
  for (const auto& item : fs::directory_iterator(dir.path() / "v1" / "leases"))
    if (item.path().extension() == ".handed")
      markers.push_back(item.path().filename());
  EXPECT_EQ(markers, std::vector<fs::path>{}) << "every key is stored";

  auto cleared = test::run_cli({"clear"}, variables("detach"));
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  test::TempDir pocl; // PoCL's cache of a new machine
  auto fresh = variables("detach");
  fresh["POCL_CACHE_DIR"] = pocl.path().string();
  EXPECT_EQ(cli_build_outcomes(fresh), (OutcomeCounts{{"miss", n}}));
  EXPECT_EQ(stored_counter(Counter::compiles), n) << "counted since the clear";
  EXPECT_EQ(stored_counter(Counter::warm_builds), 0u);
}

// Every file under `root` that holds `secret`, by name (every byte of each regular file read).
std::vector<std::string> files_holding(const fs::path& root, const std::string& secret) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::end(it); it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec) &&
        read_file(it->path()).find(secret) != std::string::npos)
      found.push_back(it->path().string());
  return found;
}

// Keeps, under `keep`, a hard link to every request file `pending` gets while it watches (the
// detached store removes its file once done): links its .part as it is created, else the
// .jsonl it was renamed to, else the .taken a store process renamed it to.
class RequestFileCatcher {
public:
  RequestFileCatcher(const fs::path& pending, const fs::path& keep) : m_keep(keep) {
    fs::create_directories(pending);
    fs::create_directories(keep);
    m_fd = inotify_init1(IN_CLOEXEC);
    m_watch = inotify_add_watch(m_fd, pending.c_str(), IN_CREATE | IN_MOVED_TO);
    m_thread = std::thread([this, pending] {
      alignas(inotify_event) char buffer[4096];
      for (ssize_t n; (n = read(m_fd, buffer, sizeof buffer)) > 0;) {
        for (char* at = buffer; at < buffer + n;) {
          const auto* event = reinterpret_cast<const inotify_event*>(at);
          at += sizeof(inotify_event) + event->len;
          if (event->mask & IN_IGNORED)
            return;
          const fs::path stem = pending / fs::path(event->name).stem();
          for (const char* extension : {".part", ".jsonl", ".taken"})
            if (link((stem.string() + extension).c_str(),
                     (m_keep / fs::path(event->name).stem()).c_str()) == 0 ||
                errno == EEXIST)
              break;
        }
      }
    });
  }
  ~RequestFileCatcher() {
    inotify_rm_watch(m_fd, m_watch); // IN_IGNORED ends the thread
    m_thread.join();
    close(m_fd);
  }

private:
  fs::path m_keep;
  int m_fd = -1;
  int m_watch = -1;
  std::thread m_thread;
};

// Issue 27, item 1: the remote tier's password and signing key are in no record line and in no
// request file handed over, nor in any other file of the cache.
TEST_F(StoreModeTest, NoSecretIsWrittenToARecordOrARequestFile) {
  const fs::path record = dir.path() / "record.jsonl";
  auto vars = variables("detach");
  vars["JITCACHE_RECORD"] = record.string();
  vars["JITCACHE_REMOTE"] = "redis://u:S3cretPassw0rd@127.0.0.1:1";
  vars["JITCACHE_REMOTE_KEY"] = "TOP-SECRET";
  vars["POCL_WORK_GROUP_METHOD"] = "loopvec"; // what changes the build is recorded
  {
    RequestFileCatcher catcher(pending(), dir.path() / "caught");
    {
      Cache cache(Config::from_variables(vars));
      EXPECT_EQ(build_all(cache), all(Outcome::miss));
      cache.flush();
      EXPECT_EQ(cache.session_stats().get("opencl", Counter::handed_over), std::size(k_kernels));
    }
    wait_for_stores(pending());
  }
  ASSERT_FALSE(request_files(dir.path() / "caught").empty()) << "no request file was caught";
  std::ifstream in(record);
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    auto decoded = detail::decode_request(line);
    ASSERT_TRUE(decoded) << decoded.error().message;
    const std::map<std::string, std::string> compile{{"POCL_WORK_GROUP_METHOD", "loopvec"}};
    EXPECT_EQ(decoded->variables, compile) << line;
  }
  EXPECT_EQ(lines, std::size(k_kernels));
  for (const char* secret : {"S3cretPassw0rd", "TOP-SECRET"})
    EXPECT_EQ(files_holding(dir.path(), secret), std::vector<std::string>{}) << secret;
}

// A request handed over as an older jitcache wrote it, naming a cache directory in its
// variables.
fs::path write_hostile_requests(const Config& config, cl_device_id device, const fs::path& file,
                                const fs::path& elsewhere) {
  auto variables = config.variables;
  variables["JITCACHE_DIR"] = elsewhere.string();
  return write_requests(config, device, file, variables);
}

// Issue 27, item 4: a request names what to build, never where to write: `jitcache store`
// stores into the cache it runs for, whatever a request file's variables say.
TEST_F(StoreModeTest, ARequestFileNamesWhatToBuildNeverWhereToWrite) {
  const fs::path elsewhere = dir.path() / "elsewhere";
  const fs::path file =
      write_hostile_requests(config("wait"), device, dir.path() / "requests.jsonl", elsewhere);
  auto stored = test::run_cli({"store", "--json", file.string()}, variables("wait"));
  ASSERT_EQ(stored.exit_code, 0) << stored.err;
  EXPECT_FALSE(fs::exists(elsewhere)) << stored.out;
  EXPECT_GT(stored_counter(Counter::bytes_stored), 0u) << stored.out;
}

// The same through a hand-over: a request file planted in the pending folder is stored into
// that folder's own cache.
TEST_F(StoreModeTest, APlantedRequestFileIsStoredIntoThePendingFoldersOwnCache) {
  { Cache create(config("wait")); }
  fs::create_directories(pending());
  const fs::path elsewhere = dir.path() / "elsewhere";
  write_hostile_requests(config("wait"), device, pending() / "planted.jsonl", elsewhere);
  {
    Cache cache(config("detach"));
    auto built = opencl::build_program(
        cache, context, device, read_file(fs::path(JITCACHE_KERNELS) / "nbody.cl"), k_options);
    ASSERT_TRUE(built) << built.error().message;
    clReleaseProgram(built->program);
  }
  wait_for_stores(pending());
  EXPECT_FALSE(fs::exists(elsewhere));
  Cache again(config("detach"));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
}

// Issue 27, item 8: a relative JITCACHE_DIR is resolved once, where the application started;
// the store process fills that cache, not one under the directory the application moved to.
TEST_F(StoreModeTest, ARelativeCacheDirIsTheOneTheApplicationStartedIn) {
  const fs::path start = fs::current_path();
  fs::current_path(dir.path());
  const Config relative =
      Config::from_variables({{"JITCACHE_DIR", "relcache"}, {"JITCACHE_OPENCL_STORE", "detach"}});
  fs::create_directories(dir.path() / "A");
  fs::current_path(dir.path() / "A");
  {
    Cache cache(relative);
    EXPECT_EQ(build_all(cache), all(Outcome::miss));
  }
  wait_for_stores(dir.path() / "relcache" / "v1" / "pending");
  fs::current_path(start);
  EXPECT_FALSE(fs::exists(dir.path() / "A" / "relcache"));
  Cache again(Config::from_variables({{"JITCACHE_DIR", (dir.path() / "relcache").string()}}));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
}

// Issue 27, item 6: a FIFO named like a request file blocks no store process.
TEST_F(StoreModeTest, AFifoInThePendingFolderBlocksNoStoreProcess) {
  { Cache create(config("wait")); }
  fs::create_directories(pending());
  ASSERT_EQ(mkfifo((pending() / "fifo.jsonl").c_str(), 0600), 0);
  std::string err;
  EXPECT_EQ(test::run_cli_bounded({"store", "--remove", (pending() / "fifo.jsonl").string()},
                                  variables("wait"), 60, &err),
            1)
      << err;
  EXPECT_NE(err.find("FIFO"), std::string::npos) << err;
  {
    Cache cache(config("detach")); // a hand-over: its store process drains the folder
    EXPECT_EQ(build_all(cache), all(Outcome::miss));
  }
  wait_for_stores(pending());
  EXPECT_FALSE(fs::exists(fs::symlink_status(pending() / "fifo.jsonl"))) << "removed";
  Cache again(config("detach"));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
}

// Issue 27, item 6: JITCACHE_RECORD naming a FIFO (with no reader, or one that never reads) is
// a warning, and the build goes on.
TEST_F(StoreModeTest, ARecordThatIsAFifoIsAWarningNotAHang) {
  const fs::path fifo = dir.path() / "record.jsonl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string kernel = std::string(JITCACHE_KERNELS) + "/nbody.cl";
  auto vars = variables("wait");
  vars["JITCACHE_RECORD"] = fifo.string();
  std::string err;
  EXPECT_EQ(test::run_cli_bounded({"build", "--backend", "opencl", "--options", k_options, kernel},
                                  vars, 60, &err),
            0)
      << err;
  EXPECT_NE(err.find("FIFO"), std::string::npos) << err;
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK); // a reader that never reads
  ASSERT_GE(reader, 0);
  vars["JITCACHE_DIR"] = (dir.path() / "other").string();
  EXPECT_EQ(test::run_cli_bounded({"build", "--backend", "opencl", "--options", k_options, kernel},
                                  vars, 60, &err),
            0)
      << err;
  char byte;
  EXPECT_LE(read(reader, &byte, 1), 0) << "nothing was written to the FIFO";
  close(reader);
}

// Issue 27, item 7: thirty thousand stale request files and a stale symlink do not keep a
// hand-over from starting its store process, which removes or takes them a bounded batch at a
// time until none is left (issue 29: one worker drains the folder).
TEST_F(StoreModeTest, ThirtyThousandStaleRequestFilesDoNotStopTheHandOver) {
  { Cache create(config("wait")); }
  fs::create_directories(pending());
  constexpr int k_stale = 30000;
  const timeval two_hours_ago[2] = {{time(nullptr) - 7200, 0}, {time(nullptr) - 7200, 0}};
  const timeval two_days_ago[2] = {{time(nullptr) - 2 * 86400, 0}, {time(nullptr) - 2 * 86400, 0}};
  for (int i = 0; i < k_stale; ++i) {
    const std::string file = (pending() / ("stale-" + std::to_string(i) + ".jsonl")).string();
    const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0) << file;
    ASSERT_EQ(write(fd, "not a request\n", 14), 14);
    close(fd);
    ASSERT_EQ(utimes(file.c_str(), i % 2 ? two_hours_ago : two_days_ago), 0);
  }
  ASSERT_EQ(symlink("/dev/zero", (pending() / "link.jsonl").c_str()), 0);
  {
    Cache cache(config("detach"));
    EXPECT_EQ(build_all(cache), all(Outcome::miss));
    cache.flush();
    const Stats stats = cache.session_stats();
    EXPECT_EQ(stats.get("opencl", Counter::handed_over), std::size(k_kernels));
    EXPECT_EQ(stats.get("opencl", Counter::bytes_stored), 0u) << "this process stores nothing";
  }
  wait_for_stores(pending(), [&] { return store_processes(pending()).empty(); });
  EXPECT_FALSE(fs::exists(fs::symlink_status(pending() / "link.jsonl")));
  const std::size_t left = request_files(pending()).size();
  EXPECT_EQ(left, 0u) << "the two days old ones are removed, the others taken batch by batch";
  Cache again(config("detach"));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
}

// Issue 29: one store worker per cache, and a way to wait for it.

// `jitcache build` of every sample in one process, with `variables`; argv for execv.
int exec_build(const std::map<std::string, std::string>& variables) {
  for (const auto& [name, value] : variables)
    ::setenv(name.c_str(), value.c_str(), 1);
  std::vector<std::string> args{JITCACHE_CLI, "build",     "--backend",
                                "opencl",     "--options", k_options};
  for (const char* name : k_kernels)
    args.push_back(std::string(JITCACHE_KERNELS) + "/" + name);
  std::vector<char*> argv;
  for (std::string& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  const int null = ::open("/dev/null", O_WRONLY);
  ::dup2(null, STDOUT_FILENO);
  ::execv(JITCACHE_CLI, argv.data());
  return 127;
}

// A process that holds the worker lock of `pending`, as a living store worker does, until it is
// killed.
std::unique_ptr<test::ChildProcess> hold_worker_lock(const fs::path& pending) {
  fs::create_directories(pending);
  auto holder = std::make_unique<test::ChildProcess>([pending] {
    const int fd = ::open((pending / "worker.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0)
      return 1;
    test::ChildProcess::tell_parent("held");
    for (;;)
      ::pause();
  });
  EXPECT_EQ(holder->next_message(), std::optional<std::string>("held"));
  return holder;
}

// The outcomes (stored, present, dropped) that `jitcache store --json` printed.
std::map<std::string, std::size_t> outcomes_of(const std::string& out) {
  std::map<std::string, std::size_t> counts;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const auto json = nlohmann::json::parse(line);
    if (json.contains("outcome"))
      ++counts[json["outcome"].get<std::string>()];
  }
  return counts;
}

// Thirty runs one after another while a store worker is alive (here: the lock held, so nothing
// is ever stored behind the test's back): none starts a store process, each adds its request
// file; once the worker is gone, `store --wait` makes the stores left itself, each key once.
TEST_F(StoreModeTest, RunsWhileAWorkerIsAliveStartNoOtherAndTheWaitStoresEachKeyOnce) {
  { Cache create(config("wait")); }
  auto worker = hold_worker_lock(pending());
  constexpr std::size_t k_runs = 30;
  for (std::size_t run = 0; run < k_runs; ++run) {
    test::ChildProcess build([&] { return exec_build(variables("detach")); });
    ASSERT_EQ(build.wait(), 0) << build.err();
    EXPECT_EQ(store_processes(pending()), std::vector<pid_t>{}) << "run " << run;
  }
  std::size_t requests = 0;
  for (const fs::path& file : request_files(pending()))
    requests += file.extension() == ".jsonl";
  EXPECT_EQ(requests, k_runs) << "every run's file waits for the living worker";
  EXPECT_EQ(stored_counter(Counter::bytes_stored), 0u) << "no other process stored anything";

  worker.reset(); // killed: its lock is free
  auto waited =
      test::run_cli({"store", "--wait", "--timeout", "240", "--json"}, variables("detach"));
  ASSERT_EQ(waited.exit_code, 0) << waited.err;
  const auto outcomes = outcomes_of(waited.out);
  EXPECT_EQ(outcomes.at("stored"), std::size(k_kernels)) << waited.out;
  EXPECT_EQ(outcomes.at("present"), (k_runs - 1) * std::size(k_kernels)) << waited.out;
  EXPECT_EQ(request_files(pending()), std::vector<fs::path>{}) << "every request file is done";
  Cache again(config("detach"));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
  EXPECT_EQ(again.session_stats().get("opencl", Counter::compiles), 0u);
}

// Eight processes at once, real workers: each key is stored once (the bytes stored are the
// bytes of the entries), `store --wait` ends when they are done, and a new process hits all.
TEST_F(StoreModeTest, EightProcessesAtOnceStoreEachKeyOnceAndTheWaitEndsWhenDone) {
  { Cache create(config("wait")); }
  std::vector<std::unique_ptr<test::ChildProcess>> builds;
  for (int i = 0; i < 8; ++i)
    builds.push_back(
        std::make_unique<test::ChildProcess>([&] { return exec_build(variables("detach")); }));
  for (auto& build : builds)
    EXPECT_EQ(build->wait(), 0) << build->err();
  std::string err;
  EXPECT_EQ(test::run_cli_bounded({"store", "--wait", "--timeout", "240"}, variables("detach"), 300,
                                  &err),
            0)
      << err;
  // No worker holds the lock once the wait has returned (one may still be exiting: under a
  // sanitizer, its exit takes a while; it has let go of the lock and of the folder).
  const int lock = ::open((pending() / "worker.lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(lock, 0);
  EXPECT_EQ(::flock(lock, LOCK_EX | LOCK_NB), 0) << "a worker still holds the lock";
  ::close(lock);
  EXPECT_EQ(request_files(pending()), std::vector<fs::path>{}) << "every request file is done";
  auto stats = test::run_cli({"stats", "--json"}, variables("wait"));
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const auto opencl = nlohmann::json::parse(stats.out.substr(0, stats.out.find('\n')));
  EXPECT_EQ(opencl["entries"], std::size(k_kernels)) << stats.out;
  // Payload bytes stored against the entries' bytes (payload and header): a key stored twice
  // would count a whole binary more.
  EXPECT_LE(opencl["bytes_stored"].get<std::uint64_t>(), opencl["bytes"].get<std::uint64_t>())
      << "each key stored once: " << stats.out;
  // One real compile per program across the eight: the others waited for its lease, then
  // built over PoCL's cache that compile warmed (its store still pending), or hit once stored.
  EXPECT_EQ(opencl["compiles"], std::size(k_kernels)) << stats.out;
  EXPECT_EQ(opencl["misses"].get<std::uint64_t>(),
            opencl["compiles"].get<std::uint64_t>() + opencl["warm_builds"].get<std::uint64_t>())
      << stats.out;
  EXPECT_EQ(opencl["misses"].get<std::uint64_t>() + opencl["hits"].get<std::uint64_t>(),
            8 * std::size(k_kernels))
      << stats.out;
  Cache again(config("detach"));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
  EXPECT_EQ(again.session_stats().get("opencl", Counter::compiles), 0u);
}

TEST_F(StoreModeTest, TheWaitForAWorkerThatDoesNotFinishEndsAtItsLimitWithOneLine) {
  { Cache create(config("wait")); }
  const fs::path file = write_requests(config("detach"), device, dir.path() / "requests.jsonl");
  auto worker = hold_worker_lock(pending());
  fs::copy_file(file, pending() / "requests.jsonl");
  const auto start = std::chrono::steady_clock::now();
  std::string err;
  EXPECT_EQ(
      test::run_cli_bounded({"store", "--wait", "--timeout", "2"}, variables("detach"), 60, &err),
      1)
      << err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_NE(err.find("jitcache: error: store --wait: the store worker"), std::string::npos) << err;
  EXPECT_NE(err.find("still runs after 2 s, with 1 request files pending"), std::string::npos)
      << err;
  EXPECT_NE(err.find("waiting for the store worker"), std::string::npos) << "progress: " << err;
  EXPECT_TRUE(fs::exists(pending() / "requests.jsonl")) << "nothing taken";

  Cache cache(config("detach")); // the library's call, the same
  auto waited = cache.wait_for_stores(std::chrono::milliseconds(1500));
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().code, ErrorCode::runtime_error);
  EXPECT_NE(waited.error().message.find("were not done within 1500 ms"), std::string::npos)
      << waited.error().message;
}

// What `store --wait` says it waits for counts the request file the worker is storing (taken:
// FILE.taken), not only those it has not taken yet: a worker that took every file is not "0
// request files pending" for minutes.
TEST_F(StoreModeTest, TheWaitCountsTheFileTheWorkerIsStoring) {
  { Cache create(config("wait")); }
  auto worker = hold_worker_lock(pending());
  write_requests(config("detach"), device, pending() / "taken-by-the-worker.taken");
  std::string err;
  EXPECT_EQ(
      test::run_cli_bounded({"store", "--wait", "--timeout", "2"}, variables("detach"), 60, &err),
      1)
      << err;
  EXPECT_NE(err.find("still runs after 2 s, with 1 request files pending (1 being stored)"),
            std::string::npos)
      << err;
}

// `store --wait` names what the worker is storing: the worker writes it under its pid in its lock
// (here a process holding the lock as a worker mid-store does; one of an older jitcache writes
// its pid only, and is named by it alone).
TEST_F(StoreModeTest, TheWaitNamesWhatTheWorkerIsStoring) {
  { Cache create(config("wait")); }
  fs::create_directories(pending());
  test::ChildProcess worker([lock = pending() / "worker.lock"] {
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    const std::string said = std::to_string(::getpid()) + "\nmatmul.cl\n";
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0 ||
        ::pwrite(fd, said.data(), said.size(), 0) != static_cast<ssize_t>(said.size()))
      return 1;
    test::ChildProcess::tell_parent("held");
    for (;;)
      ::pause();
  });
  ASSERT_EQ(worker.next_message(), std::optional<std::string>("held"));
  write_requests(config("detach"), device, pending() / "taken-by-the-worker.taken");
  std::string err;
  EXPECT_EQ(
      test::run_cli_bounded({"store", "--wait", "--timeout", "2"}, variables("detach"), 60, &err),
      1)
      << err;
  EXPECT_NE(err.find("), storing matmul.cl: 1 request files pending (1 being stored) ("),
            std::string::npos)
      << err;
}

// With no worker alive, `store --wait` makes the stores itself; on a terminal it names each
// request as it starts it (the source file `build` was given; here, requests of the library,
// which have none, by backend and key).
TEST_F(StoreModeTest, TheWaitStoringItselfNamesEachRequestOnATerminal) {
  { Cache create(config("wait")); }
  fs::create_directories(pending());
  write_requests(config("detach"), device, pending() / "requests.jsonl");
  const test::TerminalRun run = test::run_on_terminal(
      {JITCACHE_CLI, "store", "--wait", "--timeout", "240"}, variables("detach"));
  ASSERT_EQ(run.spawned, 0);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.shown;
  std::size_t named = 0;
  for (auto at = run.shown.find("jitcache: storing opencl request "); at != std::string::npos;
       at = run.shown.find("jitcache: storing opencl request ", at + 1))
    ++named;
  EXPECT_EQ(named, std::size(k_kernels)) << run.shown;
}

// The library's call: this process's stores handed over, then waited for; a new process hits.
TEST_F(StoreModeTest, WaitForStoresReturnsOnceThisProcesssStoresAreDone) {
  {
    Cache cache(config("detach"));
    EXPECT_EQ(build_all(cache), all(Outcome::miss));
    auto waited = cache.wait_for_stores(std::chrono::minutes(4));
    ASSERT_TRUE(waited) << waited.error().message;
    EXPECT_EQ(cache.session_stats().get("opencl", Counter::handed_over), std::size(k_kernels));
  }
  EXPECT_EQ(request_files(pending()), std::vector<fs::path>{}) << "every request file is done";
  Cache again(config("detach"));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
  EXPECT_EQ(again.session_stats().get("opencl", Counter::compiles), 0u);
  EXPECT_TRUE(again.wait_for_stores(std::chrono::milliseconds(0))) << "nothing pending";
}

// A FIFO or a symlink named worker.lock blocks no hand-over, worker or wait, and is never
// followed: it is replaced by the lock file.
TEST_F(StoreModeTest, AFifoOrSymlinkNamedWorkerLockBlocksNothingAndIsNotFollowed) {
  { Cache create(config("wait")); }
  fs::create_directories(pending());
  const fs::path lock = pending() / "worker.lock";
  const fs::path outside = dir.path() / "outside";
  std::ofstream(outside) << "untouched";
  for (bool fifo : {true, false}) {
    SCOPED_TRACE(fifo ? "FIFO" : "symlink");
    fs::remove(lock);
    if (fifo)
      ASSERT_EQ(mkfifo(lock.c_str(), 0600), 0);
    else
      fs::create_symlink(outside, lock);
    const fs::path requests = write_requests(config("detach"), device, pending() / "r.jsonl");
    std::string err;
    EXPECT_EQ(test::run_cli_bounded({"store", "--wait", "--timeout", "240"}, variables("detach"),
                                    300, &err),
              0)
        << err;
    EXPECT_FALSE(fs::exists(requests));
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(lock)));
    fs::remove(lock);
    if (fifo)
      ASSERT_EQ(mkfifo(lock.c_str(), 0600), 0);
    else
      fs::create_symlink(outside, lock);
    test::ChildProcess build([&] { return exec_build(variables("detach")); });
    EXPECT_EQ(build.wait(), 0) << build.err();
    EXPECT_EQ(test::run_cli_bounded({"store", "--wait", "--timeout", "240"}, variables("detach"),
                                    300, &err),
              0)
        << err;
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(lock)));
  }
  EXPECT_EQ(read_file(outside), "untouched");
  Cache again(config("detach"));
  EXPECT_EQ(build_all(again), all(Outcome::hit));
}

} // namespace
} // namespace jitcache
