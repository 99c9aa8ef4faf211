#include "tests/stress/damage_harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

extern "C" char** environ;

namespace jitcache::test {

namespace fs = std::filesystem;

namespace {

// A build or verify that runs longer than this hangs. Generous: one that works takes seconds,
// but over a minute when instrumented (ASan) on a 2-core machine that also runs the stress test.
constexpr std::chrono::seconds k_time_limit{300};
// What a process may write to one file or map: a run-away data file is stopped here (SIGXFSZ
// counts as a crash).
constexpr rlim_t k_file_limit = rlim_t(1) << 30;
constexpr std::size_t k_page = 4096;

struct Run {
  int status = -1; ///< exit code, 128+signal, or -1 when it ran past the time limit
  std::string out, err;
};

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `argv` with JITCACHE_DIR=`cache` (OpenCL stores in the process: the next build must
// find them, not race a detached store process), output to files in `scratch`, killed after the
// limit. Everything the child needs is made before fork (trials run on several threads).
Run run(const std::vector<std::string>& argv, const fs::path& cache, const fs::path& scratch) {
  const std::string out = (scratch / "out").string(), err = (scratch / "err").string();
  std::vector<std::string> env = {"JITCACHE_DIR=" + cache.string(), "JITCACHE_LOG=warn",
                                  "JITCACHE_OPENCL_STORE=wait"};
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "JITCACHE_", 9) != 0)
      env.emplace_back(*e);
  std::vector<char*> args, envp;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env)
    envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(o, 1);
    ::dup2(e, 2);
    const rlimit file{k_file_limit, k_file_limit};
    ::setrlimit(RLIMIT_FSIZE, &file);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  Run result;
  const auto deadline = std::chrono::steady_clock::now() + k_time_limit;
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, WNOHANG) == pid)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      result.out = read_all(out);
      result.err = read_all(err);
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_all(out);
  result.err = read_all(err);
  return result;
}

std::string describe(const std::string& what, const Run& r) {
  std::string text = what + (r.status < 0 ? " hung" : " exited " + std::to_string(r.status));
  if (r.status >= 128)
    text += " (signal " + std::to_string(r.status - 128) + ")";
  const std::string err = r.err.substr(0, 400);
  return text + (err.empty() ? "" : ": " + err);
}

fs::path find_file(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->path().filename() == name)
      return it->path();
  return {};
}

bool has_aside_file(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->path().filename().string().rfind("data.mdb.corrupt-", 0) == 0)
      return true;
  return false;
}

void write_all(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void damage(const fs::path& data, DamageKind kind, std::mt19937& rng) {
  std::string bytes = read_all(data);
  const std::size_t size = bytes.size();
  const auto random_bytes = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < std::min(to, size); ++i)
      bytes[i] = char(rng());
  };
  switch (kind) {
  case DamageKind::random_range: {
    const std::size_t at = rng() % size;
    random_bytes(at, at + 1 + rng() % (16 * k_page));
    break;
  }
  case DamageKind::middle_random:
    random_bytes(size / 3, 2 * size / 3);
    break;
  case DamageKind::middle_ff:
    std::fill(bytes.begin() + size / 3, bytes.begin() + 2 * size / 3, '\xff');
    break;
  case DamageKind::zero_page: {
    const std::size_t page = 2 + rng() % (size / k_page - 2);
    std::fill_n(bytes.begin() + page * k_page, k_page, '\0');
    break;
  }
  case DamageKind::zero_meta0:
  case DamageKind::zero_meta1:
    std::fill_n(bytes.begin() + (kind == DamageKind::zero_meta1 ? k_page : 0), k_page, '\0');
    break;
  case DamageKind::bit_flip:
    bytes[rng() % size] ^= char(1u << (rng() % 8));
    break;
  case DamageKind::truncate:
    bytes.resize(rng() % size);
    break;
  case DamageKind::empty_file:
    bytes.clear();
    break;
  case DamageKind::garbage_lock: {
    std::string lock(1 + rng() % (64 * 1024), '\0');
    for (char& c : lock)
      c = char(rng());
    write_all(data.parent_path() / "lock.mdb", lock);
    return;
  }
  case DamageKind::garbage_use_log: {
    std::string log(8 + rng() % (64 * 1024), '\0');
    for (char& c : log)
      c = char(rng());
    for (int i = rng() % 16; i > 0; --i) // record starts, with lengths that are random too
      log.replace(rng() % (log.size() - 8), 4, "JCU1");
    write_all(data.parent_path() / "uses.log", log);
    return;
  }
  }
  write_all(data, bytes);
}

// The worker's outcome per kernel ("hit"/"miss"), from its JSON lines.
std::vector<std::string> outcomes(const std::string& out) {
  std::vector<std::string> found;
  const std::string tag = "\"outcome\":\"";
  for (std::size_t at = out.find(tag); at != std::string::npos; at = out.find(tag, at + 1)) {
    const std::size_t from = at + tag.size();
    found.push_back(out.substr(from, out.find('"', from) - from));
  }
  return found;
}

} // namespace

const std::vector<DamageKind>& all_damage_kinds() {
  static const std::vector<DamageKind> kinds = {
      DamageKind::random_range, DamageKind::middle_random,  DamageKind::middle_ff,
      DamageKind::zero_page,    DamageKind::zero_meta0,     DamageKind::zero_meta1,
      DamageKind::bit_flip,     DamageKind::truncate,       DamageKind::empty_file,
      DamageKind::garbage_lock, DamageKind::garbage_use_log};
  return kinds;
}

std::string to_string(DamageKind kind) {
  switch (kind) {
  case DamageKind::random_range:
    return "random range";
  case DamageKind::middle_random:
    return "middle third random";
  case DamageKind::middle_ff:
    return "middle third 0xFF";
  case DamageKind::zero_page:
    return "zeroed page";
  case DamageKind::zero_meta0:
    return "meta page 0 zeroed";
  case DamageKind::zero_meta1:
    return "meta page 1 zeroed";
  case DamageKind::bit_flip:
    return "bit flip";
  case DamageKind::truncate:
    return "truncation";
  case DamageKind::empty_file:
    return "empty file";
  case DamageKind::garbage_lock:
    return "garbage lock.mdb";
  case DamageKind::garbage_use_log:
    return "garbage uses.log";
  }
  return "?";
}

namespace {

// `jitcache build` of the sample kernels, with --json: one line per kernel with its outcome.
std::vector<std::string> sample_build(const DamageTools& tools) {
  std::vector<std::string> build = {tools.cli, "build",     "--backend",          "opencl",
                                    "--json",  "--options", "-I " + tools.kernels};
  for (const auto& item : fs::directory_iterator(tools.kernels))
    if (item.path().extension() == ".cl")
      build.push_back(item.path().string());
  return build;
}

std::vector<std::string> worker(const DamageTools& tools, std::uint32_t seed) {
  return {tools.worker, std::to_string(seed), std::to_string(k_damage_worker_kernels), "0"};
}

} // namespace

std::string populate_cache(const DamageTools& tools, const fs::path& dir) {
  fs::create_directories(dir);
  if (const Run r = run(sample_build(tools), dir, dir.parent_path()); r.status != 0)
    return describe("jitcache build", r);
  const Run r = run(worker(tools, 1), dir, dir.parent_path());
  return r.status == 0 ? "" : describe("stress_worker", r);
}

TrialResult run_damage_trial(const DamageTools& tools, const fs::path& pristine,
                             const fs::path& work, DamageKind kind, std::uint32_t seed) {
  TrialResult result;
  const fs::path cache = work / "cache";
  std::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work);
  fs::copy(pristine, cache, fs::copy_options::recursive);
  // A clean end was marked by the last process; damage done now is what no process saw.
  std::mt19937 rng(seed);
  damage(find_file(cache, "data.mdb"), kind, rng);

  const auto fail = [&](const std::string& why) {
    result.failure = why;
    return result;
  };
  const Run before = run({tools.cli, "verify"}, cache, work);
  if (before.status < 0 || before.status >= 128)
    return fail(describe("verify before", before));
  result.detected = before.status != 0;
  bool all_hit = true;
  for (int build = 1; build <= 3; ++build) {
    // The worker's kernels are run and checked; the sample kernels are built (so that every
    // entry of the cache is read, and replaced when damaged).
    std::string joined;
    for (const auto& argv : {worker(tools, seed), sample_build(tools)}) {
      const Run r = run(argv, cache, work);
      const std::vector<std::string> seen = outcomes(r.out);
      const std::size_t expected =
          argv[0] == tools.worker ? std::size_t(k_damage_worker_kernels) : argv.size() - 7;
      for (const std::string& o : seen) {
        joined += (joined.empty() ? "" : "/") + o;
        all_hit = all_hit && o == "hit";
      }
      if (r.status != 0 || seen.size() != expected)
        return fail(describe("build " + std::to_string(build), r) + " [" + r.out.substr(0, 400) +
                    "]");
    }
    result.outcomes += (build > 1 ? "," : "") + joined;
    if (build == 3 && joined.find("miss") != std::string::npos)
      return fail("build 3 did not hit: " + joined);
  }
  result.quarantined = has_aside_file(cache);
  const Run after = run({tools.cli, "verify"}, cache, work);
  if (after.status != 0)
    return fail(describe("verify after", after) + " " + after.out.substr(0, 400));
  // What `list` reads of each entry's use (its hits, the time) survives the damage: it runs,
  // and each count is unknown (null: damaged, or replaced since) or one the trial could have
  // made (a process hits an entry at most once: populating and three builds of two programs).
  const Run listed = run({tools.cli, "list", "--json"}, cache, work);
  if (listed.status != 0)
    return fail(describe("list", listed));
  constexpr int k_most_hits = 1 + 3 * 2;
  for (std::size_t at = listed.out.find("\"hits\":"); at != std::string::npos;
       at = listed.out.find("\"hits\":", at + 1)) {
    const std::string value =
        listed.out.substr(at + 7, listed.out.find_first_of(",}", at) - at - 7);
    if (value != "null" && (value.empty() || value.size() > 2 ||
                            value.find_first_not_of("0123456789") != std::string::npos ||
                            std::stoi(value) > k_most_hits))
      return fail("list shows " + value + " hits for an entry: " + listed.out.substr(0, 400));
  }
  // Undetected damage must be harmless: nothing moved aside, every entry verify counted still
  // there (an empty data file is an empty cache, which LMDB starts afresh).
  const bool empty_before = before.out.rfind("0 entries checked", 0) == 0 ||
                            before.out.find("\n0 entries checked") != std::string::npos;
  if (!result.detected && ((!all_hit && !empty_before) || result.quarantined))
    return fail("verify passed before, but the builds found damage (" + result.outcomes +
                (result.quarantined ? ", moved aside" : "") + ")");
  result.passed = true;
  return result;
}

} // namespace jitcache::test
