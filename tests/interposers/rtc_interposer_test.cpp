// The NVRTC and hipRTC front-ends as applications meet them: a C program (tests/interposers/
// rtc_client.c) that links the runtime, or dlopens it, compiles the sample kernels (headers in
// memory, include paths, name expressions, a compile error) and dumps every answer it gets. With
// the front-end, first run (misses) and second run (hits, counted), the dumps are byte-identical
// to the run without it; so they are over a damaged cache, and with the front-end turned off.

#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace jitcache::test {

namespace {

namespace fs = std::filesystem;

// One front-end and the ways a program reaches it.
struct FrontEndCase {
  std::string name;   ///< "nvrtc": the counters' backend
  std::string client; ///< rtc_client built for the runtime
  std::string toolkit_include;
  std::string off_variable; ///< JITCACHE_NVRTC
  /// How a program reaches the runtime (rtc_client's mode) and the environment that puts the
  /// front-end in its way.
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> ways;
  int stored = 0; ///< the programs of the dump that compile (a failed compile is not stored)
  std::vector<std::string> targets; ///< those the dump's programs compile for (their options)
  std::string other_target;         ///< one they do not, to warm a record for
};

void PrintTo(const FrontEndCase& front_end, std::ostream* out) {
  *out << front_end.name;
}

std::vector<FrontEndCase> front_ends() {
  std::vector<FrontEndCase> cases;
#ifdef RTC_NVRTC_CLIENT
  const std::string real_dir = RTC_NVRTC_REAL_DIR;
  cases.push_back(
      {"nvrtc",
       RTC_NVRTC_CLIENT,
       RTC_CUDA_INCLUDE,
       "JITCACHE_NVRTC",
       {{"link", {{"LD_LIBRARY_PATH", std::string(RTC_NVRTC_FOLDER) + ":" + real_dir}}},
        {"link", {{"LD_PRELOAD", RTC_NVRTC_FRONT_END}}},
        {"handle", {{"LD_LIBRARY_PATH", std::string(RTC_NVRTC_FOLDER) + ":" + real_dir}}},
        {"global", {{"LD_PRELOAD", RTC_NVRTC_FRONT_END}}}},
       4,
       {"sm_80", "sm_90", "compute_90"},
       "sm_86"});
#endif
#ifdef RTC_HIPRTC_CLIENT
  cases.push_back({"hiprtc",
                   RTC_HIPRTC_CLIENT,
                   "",
                   "JITCACHE_HIPRTC",
                   {{"link", {{"LD_PRELOAD", RTC_HIPRTC_FRONT_END}}},
                    {"global", {{"LD_PRELOAD", RTC_HIPRTC_FRONT_END}}}},
                   3,
                   {"gfx90a", "gfx1030"},
                   "gfx908"});
#endif
#ifdef RTC_SANITIZED
  // A sanitized front-end preloaded ahead of the sanitizer's runtime is refused by it: under
  // sanitizers, only the ways in that load the front-end as the runtime's soname.
  for (FrontEndCase& front_end : cases)
    front_end.ways.erase(
        std::remove_if(front_end.ways.begin(), front_end.ways.end(),
                       [](const auto& way) { return way.second.count("LD_PRELOAD"); }),
        front_end.ways.end());
  cases.erase(std::remove_if(cases.begin(), cases.end(),
                             [](const FrontEndCase& front_end) { return front_end.ways.empty(); }),
              cases.end());
#endif
  return cases;
}

std::map<std::string, std::string> env_with(std::map<std::string, std::string> env,
                                            const std::string& name, const std::string& value) {
  env[name] = value;
  return env;
}

// `text` with each "/comgr-NAME/" made "/comgr-X/": comgr's temporary folder, in TMPDIR or /tmp
// (without std::regex, which GCC 12 warns of, maybe-uninitialized, in the sanitized build).
std::string without_comgr_folders(std::string text) {
  const std::string prefix = "/comgr-";
  for (std::size_t at = text.find(prefix); at != std::string::npos;
       at = text.find(prefix, at + 1)) {
    std::size_t end = at + prefix.size();
    while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end])))
      ++end;
    if (end > at + prefix.size() && end < text.size() && text[end] == '/')
      text.replace(at + prefix.size(), end - at - prefix.size(), "X");
  }
  return text;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class RtcInterposerTest : public ::testing::TestWithParam<FrontEndCase> {
protected:
  // The include path's folder the tests share (its path is in the outputs: NVRTC's LTO-IR names
  // the include directories), so that the runs without the front-end are made once.
  static fs::path shared_headers() {
    static TempDir dir;
    static const bool written = write_helper(dir.path(), "2 * x");
    static_cast<void>(written);
    return dir.path();
  }
  static bool write_helper(const fs::path& dir, const std::string& expression) {
    std::ofstream(dir / "rtc_test_helper.h")
        << "static __device__ float helper_twice(float x) { return " << expression << "; }\n";
    return true;
  }

  // rtc_client's dump for `way` with `env` (plus the cache directory), checked to have run.
  std::string dump(const std::string& mode, std::map<std::string, std::string> env) {
    const fs::path file = m_dir.path() / ("dump" + std::to_string(m_runs++));
    env["JITCACHE_DIR"] = m_cache.string();
    const auto run = run_process({GetParam().client, mode, JITCACHE_KERNELS, m_headers.string(),
                                  GetParam().toolkit_include, file.string()},
                                 env);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    // comgr names a temporary folder of its own in a compile error's log: the runtime's answer
    // differs from run to run by that name alone.
    return without_comgr_folders(read_bytes(file));
  }

  // The front-end's line of `jitcache stats --json`; null when it has none.
  nlohmann::json stats() {
    const auto run = run_cli({"stats", "--json"}, {{"JITCACHE_DIR", m_cache.string()}});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    for (const auto& line : json_lines(run.out))
      if (line["backend"] == GetParam().name)
        return line;
    return nullptr;
  }

  // The front-end's counters: hits, misses.
  std::pair<std::uint64_t, std::uint64_t> counters() {
    const nlohmann::json line = stats();
    if (line.is_null())
      return {0, 0};
    return {line["hits"].get<std::uint64_t>(), line["misses"].get<std::uint64_t>()};
  }

  // The answers without the front-end (the same whichever way the program reaches the runtime),
  // made once per content of the include path's header (and per target of RTC_ARCH).
  std::string baseline(const std::string& arch = "") {
    static std::map<std::string, std::string> made;
    const std::string key = GetParam().name + m_headers.string() +
                            read_bytes(m_headers / "rtc_test_helper.h") + "\n" + arch;
    auto it = made.find(key);
    if (it == made.end()) {
      std::map<std::string, std::string> env;
      if (!arch.empty())
        env["RTC_ARCH"] = arch;
      it = made.emplace(key, dump("link", env)).first;
    }
    return it->second;
  }

  // The ways in where the front-end stands in for the runtime's soname (its folder first on
  // LD_LIBRARY_PATH): only there does the loader map no real library of its own.
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> soname_ways() const {
    std::vector<std::pair<std::string, std::map<std::string, std::string>>> ways;
    for (const auto& way : GetParam().ways)
      if (way.second.count("LD_LIBRARY_PATH"))
        ways.push_back(way);
    return ways;
  }
  static constexpr const char* k_no_soname_way =
      "the client is linked with the real library (hipRTC's is libamdhip64), which the loader "
      "maps whichever way the front-end comes in";

  TempDir m_dir;
  const fs::path m_cache = m_dir.path() / "cache";
  fs::path m_headers = shared_headers();
  std::atomic<int> m_runs{0}; ///< dump() may run in several threads at once
};

TEST_P(RtcInterposerTest, EveryWayInAnswersByteForByteAndTheSecondProcessHits) {
  const FrontEndCase& front_end = GetParam();
  std::uint64_t hits = 0;
  for (const auto& [mode, env] : front_end.ways) {
    SCOPED_TRACE(mode + " with " + env.begin()->first);
    const std::string expected = baseline();
    fs::remove_all(m_cache);
    EXPECT_EQ(dump(mode, env), expected) << "first run (misses)";
    EXPECT_EQ(counters(), std::make_pair(std::uint64_t{0}, std::uint64_t(front_end.stored)));
    EXPECT_EQ(dump(mode, env), expected) << "second run (hits)";
    hits = counters().first;
    EXPECT_EQ(hits, std::uint64_t(front_end.stored));
  }
}

// The calls that depend on the runtime's library alone (its version; NVRTC's archs), asked by
// applications at their start, are answered as the runtime answers them, and a process that
// finds them remembered opens no runtime to answer them.
TEST_P(RtcInterposerTest, AWarmProcessAsksTheLibraryWithoutOpeningTheRuntime) {
  const auto ways = soname_ways();
  if (ways.empty())
    GTEST_SKIP() << k_no_soname_way;
  const fs::path report = m_dir.path() / "loaded";
  // What the process that ran last mapped of the real library (each run writes the report anew).
  const auto mapped = [&] {
    std::string files = read_bytes(report);
    fs::remove(report);
    return files;
  };
  const std::string expected = baseline();
  // Without the front-end, the real library is mapped when the calls return: what is looked for.
  // The front-end's folder comes first on LD_LIBRARY_PATH, the real library's after it.
  const std::string& path = ways.front().second.at("LD_LIBRARY_PATH");
  ASSERT_NE(path.find(':'), std::string::npos) << path;
  const std::map<std::string, std::string> without{
      {"RTC_LOADED", report.string()}, {"LD_LIBRARY_PATH", path.substr(path.find(':') + 1)}};
  EXPECT_EQ(dump(ways.front().first, without), expected);
  EXPECT_NE(mapped(), "");
  for (const auto& [mode, env] : ways) {
    SCOPED_TRACE(mode);
    fs::remove_all(m_cache);
    const auto with = env_with(env, "RTC_LOADED", report.string());
    EXPECT_EQ(dump(mode, with), expected) << "first run";
    EXPECT_NE(mapped(), "") << "the first process opens the runtime to ask it";
    EXPECT_EQ(dump(mode, with), expected) << "second run";
    EXPECT_TRUE(fs::exists(report)) << "the second process wrote no report";
    EXPECT_EQ(mapped(), "") << "the second process opened the runtime to answer";
    // A process that makes no program opens nothing at all, and asks again during exit, when the
    // front-end's objects are being destroyed (rtc_client exits 3 on another answer).
    const std::string library = expected.substr(0, expected.find("== "));
    EXPECT_EQ(dump(mode, env_with(with, "RTC_LIBRARY_ONLY", "1")), library) << "no program";
    EXPECT_EQ(mapped(), "") << "the process without a program opened the runtime";
    EXPECT_EQ(counters().first, std::uint64_t(GetParam().stored));
  }
}

// Eight processes at once on an empty cache answer alike, each asking the runtime unless another
// has remembered the answers by then; thirty after them, one after another, open nothing.
TEST_P(RtcInterposerTest, EightAtOnceAskTheRuntimeThenThirtyInARowOpenNothing) {
  const auto ways = soname_ways();
  if (ways.empty())
    GTEST_SKIP() << k_no_soname_way;
  const auto& way = ways.front();
  const std::string expected = baseline();
  const std::string library = expected.substr(0, expected.find("== "));
  const auto report = [&](int process) {
    return m_dir.path() / ("loaded" + std::to_string(process));
  };
  const auto ask = [&](int process) {
    auto env = env_with(way.second, "RTC_LIBRARY_ONLY", "1");
    env["RTC_LOADED"] = report(process).string();
    EXPECT_EQ(dump(way.first, env), library) << "process " << process;
  };
  std::vector<std::thread> at_once;
  for (int process = 0; process < 8; ++process)
    at_once.emplace_back(ask, process);
  for (std::thread& thread : at_once)
    thread.join();
  // Which of them found another's answers remembered depends on timing; the first to ask cannot.
  int opened = 0;
  for (int process = 0; process < 8; ++process)
    opened += read_bytes(report(process)).empty() ? 0 : 1;
  EXPECT_GE(opened, 1);
  for (int process = 8; process < 38; ++process) {
    ask(process);
    EXPECT_TRUE(fs::exists(report(process)));
    EXPECT_EQ(read_bytes(report(process)), "") << "process " << process << " opened the runtime";
  }
}

// A program that compiles, asks no library call first, and keeps a program until exit, where
// (as a global object's destructor would) it reads its outputs, destroys it and asks the
// version, after the front-end's own objects (its configuration, its description, its Cache)
// were destroyed: every answer as without the front-end. Under AddressSanitizer (the sanitized
// tree runs this test) a destroyed object touched would be reported and fail the run.
TEST_P(RtcInterposerTest, CallsDuringExitAnswerAsWithoutTheFrontEnd) {
  const std::string expected = dump("link", {{"RTC_AT_EXIT", "1"}});
  const std::size_t exit_at = expected.find("== during exit\n");
  ASSERT_NE(expected.find("== kept\ncreate 0\ncompile 0\n"), std::string::npos);
  ASSERT_NE(exit_at, std::string::npos);
  ASSERT_NE(expected.find("destroy 0\nversion 0 ", exit_at), std::string::npos);
  // Where two dumps part (the whole dumps hold binaries): the first differing byte.
  const auto same = [&](const std::string& got) -> ::testing::AssertionResult {
    if (got == expected)
      return ::testing::AssertionSuccess();
    const auto at = std::mismatch(got.begin(), got.end(), expected.begin(), expected.end());
    const std::size_t offset = static_cast<std::size_t>(at.first - got.begin());
    return ::testing::AssertionFailure()
           << "the dumps part at byte " << offset << " of " << got.size() << " (expected "
           << expected.size() << ", its exit's part from " << exit_at
           << "): " << got.substr(offset, 80);
  };
  for (const auto& [mode, env] : GetParam().ways) {
    SCOPED_TRACE(mode + " with " + env.begin()->first);
    fs::remove_all(m_cache);
    const auto with = env_with(env, "RTC_AT_EXIT", "1");
    EXPECT_TRUE(same(dump(mode, with))) << "first run (misses)";
    EXPECT_TRUE(same(dump(mode, with))) << "second run (hits)";
    EXPECT_EQ(counters().first, std::uint64_t(GetParam().stored + 1))
        << "every program a hit, the one kept until exit too";
  }
}

TEST_P(RtcInterposerTest, ADamagedCacheChangesNoAnswer) {
  const auto& [mode, env] = GetParam().ways.front();
  const std::string expected = baseline();
  ASSERT_EQ(dump(mode, env), expected);
  const fs::path data = m_cache / "v1" / "data.mdb";
  ASSERT_TRUE(fs::exists(data));
  const auto size = fs::file_size(data);
  std::mt19937 random(28);
  std::printf("seed 28\n");
  // Three kinds of damage, each followed by a run: bytes flipped in every page, a run of garbage
  // over the middle of the file, the file cut short.
  {
    std::fstream file(data, std::ios::in | std::ios::out | std::ios::binary);
    for (std::uint64_t page = 0; page < size; page += 4096) {
      file.seekp(static_cast<std::streamoff>(page + 64 + random() % 4000));
      file.put(static_cast<char>(random()));
    }
  }
  EXPECT_EQ(dump(mode, env), expected) << "bytes flipped";
  if (fs::exists(data)) { // the damaged file may have been moved aside, and a new one made
    std::fstream out(data, std::ios::in | std::ios::out | std::ios::binary);
    const auto now = fs::file_size(data);
    out.seekp(static_cast<std::streamoff>(now / 4));
    for (std::uint64_t i = now / 4; i < now * 3 / 4; ++i)
      out.put(static_cast<char>(random()));
  }
  EXPECT_EQ(dump(mode, env), expected) << "garbage over the middle";
  if (fs::exists(data))
    fs::resize_file(data, fs::file_size(data) / 3);
  EXPECT_EQ(dump(mode, env), expected) << "cut short";
  EXPECT_EQ(dump(mode, env), expected) << "after the damage was handled";
}

TEST_P(RtcInterposerTest, TurnedOffItPassesEveryCallThrough) {
  const auto& [mode, env] = GetParam().ways.front();
  const std::string expected = baseline();
  auto off = env;
  off[GetParam().off_variable] = "0";
  EXPECT_EQ(dump(mode, off), expected);
  EXPECT_EQ(dump(mode, off), expected);
  EXPECT_FALSE(fs::exists(m_cache)) << "a front-end turned off creates nothing";
  EXPECT_EQ(counters(), std::make_pair(std::uint64_t{0}, std::uint64_t{0}));
}

TEST_P(RtcInterposerTest, AnUnusableCacheChangesNoAnswer) {
  const auto& [mode, env] = GetParam().ways.front();
  const std::string expected = baseline();
  fs::create_directories(m_cache.parent_path());
  std::ofstream(m_cache) << "a file where the cache directory should be";
  EXPECT_EQ(dump(mode, env), expected);
  EXPECT_EQ(dump(mode, env), expected);
}

TEST_P(RtcInterposerTest, AChangedIncludedHeaderIsAMiss) {
  const auto& [mode, env] = GetParam().ways.front();
  m_headers = m_dir.path() / "headers"; // a folder of its own: its header changes
  fs::create_directories(m_headers);
  write_helper(m_headers, "2 * x");
  ASSERT_EQ(dump(mode, env), baseline());
  write_helper(m_headers, "x + x");
  const std::string expected = baseline();
  EXPECT_EQ(dump(mode, env), expected);
  const auto [hits, misses] = counters();
  EXPECT_EQ(hits, std::uint64_t(GetParam().stored - 1));
  EXPECT_EQ(misses, std::uint64_t(GetParam().stored + 1));
}

TEST_P(RtcInterposerTest, APackageOfARunServesAFreshUserTier) {
  const auto& [mode, env] = GetParam().ways.front();
  const std::string expected = baseline();
  ASSERT_EQ(dump(mode, env), expected);
  // A package serves one target: one per target the run's programs name in their options.
  const fs::path packages = m_dir.path() / "packages";
  fs::create_directories(packages);
  for (const std::string& target : GetParam().targets) {
    const auto run = run_cli({"export", "-o", (packages / (target + ".jcpkg")).string(),
                              "--backend", GetParam().name, "--arch", target, "--json"},
                             {{"JITCACHE_DIR", m_cache.string()}});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(json_lines(run.out).at(0)["target"], target);
  }
  fs::remove_all(m_cache);
  auto system = env;
  system["JITCACHE_SYSTEM_PATH"] = packages.string();
  EXPECT_EQ(dump(mode, system), expected);
  const nlohmann::json line = stats();
  ASSERT_FALSE(line.is_null());
  EXPECT_EQ(line["misses"], 0);
  EXPECT_EQ(line["hits"], GetParam().stored);
  EXPECT_EQ(line["hits_by_tier"].value("system", 0), GetParam().stored) << line.dump();
}

TEST_P(RtcInterposerTest, ARecordedRunIsWarmedForAnotherTarget) {
  const auto& [mode, env] = GetParam().ways.front();
  const std::string other = GetParam().other_target;
  const std::string expected = baseline(other);
  const fs::path record = m_dir.path() / "record.jsonl";
  auto recording = env;
  recording["JITCACHE_RECORD"] = record.string();
  ASSERT_EQ(dump(mode, recording), baseline());
  const auto warm = run_cli({"warm", record.string(), "--arch", other, "--json"},
                            {{"JITCACHE_DIR", m_cache.string()}});
  ASSERT_EQ(warm.exit_code, 0) << warm.out << warm.err;
  std::size_t warmed = 0;
  for (const auto& line : json_lines(warm.out))
    if (line.contains("outcome")) {
      EXPECT_EQ(line["backend"], GetParam().name);
      EXPECT_EQ(line["target"], other);
      EXPECT_NE(line["outcome"], "failed") << line.dump();
      ++warmed;
    }
  EXPECT_EQ(warmed, std::size_t(GetParam().stored)) << warm.out;
  // The application run for that target: every program a hit, nothing compiled.
  const auto [hits, misses] = counters();
  EXPECT_EQ(dump(mode, env_with(env, "RTC_ARCH", other)), expected);
  EXPECT_EQ(counters(), std::make_pair(hits + GetParam().stored, misses));
}

INSTANTIATE_TEST_SUITE_P(FrontEnds, RtcInterposerTest, ::testing::ValuesIn(front_ends()),
                         [](const auto& info) { return info.param.name; });

} // namespace

} // namespace jitcache::test
