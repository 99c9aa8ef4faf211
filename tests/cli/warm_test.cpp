// Record and warm (issue 13, parts 1 and 2): `jitcache build --record` and JITCACHE_RECORD
// write each distinct request once; `jitcache warm` compiles a record for targets that are not
// present, into an empty cache, and the application's own build is then a hit.
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/terminal.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <set>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace jitcache {
namespace {
using test::k_kernels;

namespace fs = std::filesystem;
using test::json_lines;
using test::run_cli;

void write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::ofstream out(file, std::ios::trunc);
  for (const std::string& line : lines)
    out << line << '\n';
}

bool built(const std::string& backend) {
  const auto info = run_cli({"info", "--json"});
  return info.exit_code == 0 &&
         nlohmann::json::parse(info.out)["backends"][backend]["built"].get<bool>();
}

// The `stats` line of `backend` in the cache at `dir`.
nlohmann::json stats(const fs::path& dir, const std::string& backend) {
  for (const auto& line : json_lines(run_cli({"stats", "--json"}, {{"JITCACHE_DIR", dir}}).out))
    if (line["backend"] == backend)
      return line;
  return {};
}

class WarmTest : public ::testing::Test {
protected:
  // Builds `files` with `args` into the cache at `dir` (recording into `record` when given).
  test::ProcessResult build(const std::string& backend, std::vector<std::string> args,
                            const std::vector<std::string>& files, const fs::path& dir,
                            const fs::path& record = {}) {
    args.insert(args.begin(), {"build", "--backend", backend, "--json"});
    if (!record.empty())
      args.insert(args.end(), {"--record", record.string()});
    args.insert(args.end(), files.begin(), files.end());
    return run_cli(args, {{"JITCACHE_DIR", dir.string()}, {"JITCACHE_OPENCL_STORE", "wait"}});
  }
  test::ProcessResult warm(std::vector<std::string> args) {
    args.insert(args.begin(), {"warm", record.string()});
    return run_cli(args);
  }

  // Records `files`, warms the record for `targets` into an empty cache, then builds each file
  // for `check` there: every build is a hit, and the cache counts no compile.
  void record_warm_build(const std::string& backend, const std::vector<std::string>& options,
                         const std::vector<std::string>& files, const std::string& recorded,
                         const std::string& targets, const std::string& check) {
    auto with = [&](const std::string& arch) {
      std::vector<std::string> args = options;
      args.insert(args.end(), {"--arch", arch});
      return args;
    };
    auto first = build(backend, with(recorded), files, app.path(), record);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ASSERT_EQ(test::file_lines(record).size(), files.size());

    auto warmed =
        warm({"--arch", targets, "--into", into.path().string(), "--jobs", "2", "--json"});
    ASSERT_EQ(warmed.exit_code, 0) << warmed.out << warmed.err;
    EXPECT_EQ((warmed.out + warmed.err).find('\r'), std::string::npos)
        << "no progress line redrawn off a terminal: " << warmed.err;
    const auto lines = json_lines(warmed.out);
    std::size_t compiled = 0;
    std::set<std::string> rows;
    for (const auto& line : lines) {
      if (line.contains("outcome"))
        compiled += line["outcome"] == "compiled";
      else
        rows.insert(line["target"].get<std::string>());
    }
    const std::size_t target_count = std::count(targets.begin(), targets.end(), ',') + 1;
    EXPECT_EQ(compiled, files.size() * target_count) << warmed.out;
    EXPECT_EQ(rows.size(), target_count) << "one summary row per target: " << warmed.out;

    const auto compiles = stats(into.path(), backend)["compiles"];
    auto again = build(backend, with(check), files, into.path());
    ASSERT_EQ(again.exit_code, 0) << again.err;
    for (const auto& line : json_lines(again.out))
      EXPECT_EQ(line["outcome"], "hit") << line;
    EXPECT_EQ(stats(into.path(), backend)["compiles"], compiles) << "the build compiled nothing";
  }

  test::TempDir app, into, files;
  const fs::path record = files.path() / "record.jsonl";
};

TEST_F(WarmTest, CudaRecordWarmedForTwoArchitecturesIsAHitThere) {
  if (!built("cuda"))
    GTEST_SKIP() << "CUDA backend not built";
  record_warm_build("cuda", {}, {k_kernels + "/saxpy.cu", k_kernels + "/scale.cu"}, "sm_80",
                    "sm_80,sm_90", "sm_90");
}

// A package installed on the warming machine does not stand in for the tier being warmed: what
// it serves is compiled into --into all the same, so that an export from there has it.
TEST_F(WarmTest, AnInstalledPackageDoesNotStandInForTheWarmedTier) {
  if (!built("cuda"))
    GTEST_SKIP() << "CUDA backend not built";
  const std::string file = k_kernels + "/saxpy.cu";
  ASSERT_EQ(build("cuda", {"--arch", "sm_80"}, {file}, app.path(), record).exit_code, 0);
  const fs::path package = files.path() / "cuda-sm_80.jcpkg";
  auto exported = run_cli({"export", "-o", package.string(), "--backend", "cuda"},
                          {{"JITCACHE_DIR", app.path().string()}});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  auto warmed = run_cli({"warm", record.string(), "--into", into.path().string(), "--json"},
                        {{"JITCACHE_SYSTEM_PATH", package.string()}});
  ASSERT_EQ(warmed.exit_code, 0) << warmed.err;
  EXPECT_EQ(json_lines(warmed.out).at(0)["outcome"], "compiled") << warmed.out;
  auto listed = run_cli({"list", "--json"}, {{"JITCACHE_DIR", into.path().string()}});
  EXPECT_EQ(json_lines(listed.out).size(), 1u) << listed.out;
}

TEST_F(WarmTest, HipRecordWarmedForTwoTargetsIsAHitThere) {
  if (!built("hip"))
    GTEST_SKIP() << "HIP backend not built";
  record_warm_build("hip", {"--options", "-I " + k_kernels},
                    {k_kernels + "/saxpy.hip", k_kernels + "/reduce.hip"}, "gfx90a",
                    "gfx90a,gfx1030", "gfx1030");
}

TEST_F(WarmTest, OpenclRecordOnPoclWarmedIntoAnEmptyCacheIsAHit) {
  const std::vector<std::string> options{"--options", "-I " + k_kernels};
  const std::vector<std::string> sources{k_kernels + "/matmul.cl", k_kernels + "/stencil.cl"};
  // Each request made twice in the process is recorded once.
  std::vector<std::string> twice = sources;
  twice.insert(twice.end(), sources.begin(), sources.end());
  ASSERT_EQ(build("opencl", options, twice, app.path(), record).exit_code, 0);
  const auto lines = test::file_lines(record);
  ASSERT_EQ(lines.size(), sources.size()) << "once per key and process";
  const auto first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["backend"], "opencl");
  EXPECT_EQ(first["format"], 1);
  EXPECT_EQ(first["options"], nlohmann::json::array({"-I " + k_kernels}));
  ASSERT_EQ(first["headers"].size(), 1u);
  EXPECT_EQ(first["headers"][0]["name"], "common.h");
  EXPECT_EQ(first["headers"][0]["path"], k_kernels + "/common.h");
  EXPECT_TRUE(first["identity"].contains("device_name"));

  auto warmed = warm({"--into", into.path().string(), "--json"});
  ASSERT_EQ(warmed.exit_code, 0) << warmed.out << warmed.err;
  auto again = build("opencl", options, sources, into.path());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const auto& line : json_lines(again.out))
    EXPECT_EQ(line["outcome"], "hit") << line;
}

TEST_F(WarmTest, OpenclHeadersThatAreGoneAreWrittenFromTheRecord) {
  test::TempDir moved;
  fs::copy_file(k_kernels + "/common.h", moved.path() / "common.h");
  std::ofstream(moved.path() / "tiny.cl")
      << "#include \"common.h\"\nkernel void k(global int* x) { x[0] = TILE; }\n";
  ASSERT_EQ(build("opencl", {"--options", "-I " + moved.path().string()},
                  {(moved.path() / "tiny.cl").string()}, app.path(), record)
                .exit_code,
            0);
  const std::string key = nlohmann::json::parse(test::file_lines(record).at(0))["key"];
  fs::remove(moved.path() / "common.h");
  auto warmed = warm({"--into", into.path().string(), "--json"});
  ASSERT_EQ(warmed.exit_code, 0) << warmed.out << warmed.err;
  EXPECT_EQ(json_lines(warmed.out).at(0)["key"], key);
  EXPECT_EQ(json_lines(warmed.out).at(0)["outcome"], "compiled");
}

TEST_F(WarmTest, ManyProcessesAppendOneWholeLinePerDistinctRequestEach) {
  const std::vector<std::string> sources{k_kernels + "/matmul.cl", k_kernels + "/stencil.cl"};
  ASSERT_EQ(build("opencl", {"--options", "-I " + k_kernels}, sources, app.path()).exit_code, 0);
  constexpr int k_processes = 16;
  // Each a hit through the library, twice per source: JITCACHE_RECORD, not --record.
  std::vector<std::string> args{JITCACHE_CLI, "build",     "--backend",
                                "opencl",     "--options", "-I " + k_kernels};
  for (int n = 0; n < 2; ++n)
    args.insert(args.end(), sources.begin(), sources.end());
  std::vector<std::string> variables{"JITCACHE_DIR=" + app.path().string(),
                                     "JITCACHE_RECORD=" + record.string()};
  for (char** e = environ; *e; ++e)
    variables.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (std::string& arg : args)
    argv.push_back(arg.data());
  for (std::string& variable : variables)
    envp.push_back(variable.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  std::vector<pid_t> children(k_processes);
  for (pid_t& pid : children)
    ASSERT_EQ(posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&quiet);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::map<std::string, int> per_key;
  for (const std::string& line : test::file_lines(record))
    ++per_key[nlohmann::json::parse(line).at("key").get<std::string>()];
  ASSERT_EQ(per_key.size(), sources.size());
  for (const auto& [key, count] : per_key)
    EXPECT_EQ(count, k_processes) << key;
}

// On a terminal (stderr a pseudo-terminal here), warm redraws one progress line in place: done
// of total, failures, elapsed and the time left; no plain "[n/total]" lines; a newline ends it.
TEST_F(WarmTest, OnATerminalOneProgressLineIsRedrawnInPlace) {
  if (!built("cuda"))
    GTEST_SKIP() << "CUDA backend not built";
  ASSERT_EQ(build("cuda", {"--arch", "sm_80"}, {k_kernels + "/saxpy.cu", k_kernels + "/scale.cu"},
                  app.path(), record)
                .exit_code,
            0);
  const test::TerminalRun run =
      test::run_on_terminal({JITCACHE_CLI, "warm", record.string(), "--arch", "sm_80", "--into",
                             into.path().string(), "--jobs", "1"});
  ASSERT_EQ(run.spawned, 0);
  const std::string& shown = run.shown;
  const int status = run.status;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << shown;
  EXPECT_NE(shown.find("\r\033[K1/2 done, 0 failed, "), std::string::npos) << shown;
  // The item in flight is named, with its time so far, from its start (before one is done,
  // the estimate says it is being made); once one is done, the time left is estimated.
  EXPECT_NE(shown.find("\r\033[K0/2 done, 0 failed, "), std::string::npos) << shown;
  EXPECT_NE(shown.find(" elapsed, now "), std::string::npos) << shown;
  EXPECT_NE(shown.find(", estimating"), std::string::npos) << shown;
  const auto second = shown.find("\r\033[K1/2 done, 0 failed, ");
  ASSERT_NE(second, std::string::npos) << shown;
  EXPECT_NE(shown.find(" left", second), std::string::npos) << shown;
  const auto last = shown.find("\r\033[K2/2 done, 0 failed, ");
  ASSERT_NE(last, std::string::npos) << shown;
  EXPECT_NE(shown.find('\n', last), std::string::npos) << "a newline ends the line: " << shown;
  EXPECT_EQ(shown.find("[1/2]"), std::string::npos) << shown;
}

TEST_F(WarmTest, ARecordThatCannotBeWrittenIsAWarningAndTheBuildGoesOn) {
  fs::create_symlink(files.path() / "elsewhere.jsonl", record);
  auto result = build("opencl", {"--options", "-I " + k_kernels}, {k_kernels + "/matmul.cl"},
                      app.path(), record);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("cannot append to the request record " + record.string()),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(fs::exists(files.path() / "elsewhere.jsonl")) << "the link was not followed";
}

TEST_F(WarmTest, ABadLineIsAWarningNamingFileAndLineAndTheRestIsWarmed) {
  if (!built("hip"))
    GTEST_SKIP() << "HIP backend not built";
  ASSERT_EQ(
      build("hip", {"--arch", "gfx90a"}, {k_kernels + "/saxpy.hip"}, app.path(), record).exit_code,
      0);
  auto lines = test::file_lines(record);
  lines.insert(lines.begin(), "{not json");
  lines.push_back(R"({"format": 1, "backend": "hip"})");
  // A whole record of a backend jitcache does not know is a bad line like the others.
  auto vulkan = nlohmann::json::parse(lines.at(1));
  vulkan["backend"] = "vulkan";
  vulkan["key"] = std::string(64, 'f');
  lines.push_back(vulkan.dump());
  write_lines(record, lines);
  auto warmed = warm({"--into", into.path().string(), "--json"});
  EXPECT_EQ(warmed.exit_code, 0) << warmed.err;
  EXPECT_NE(warmed.err.find(record.string() + ":4: unknown backend 'vulkan'"), std::string::npos)
      << warmed.err;
  EXPECT_NE(warmed.err.find(record.string() + ":1: not a request record"), std::string::npos)
      << warmed.err;
  EXPECT_NE(warmed.err.find(record.string() + ":3: not a request record"), std::string::npos)
      << warmed.err;
  EXPECT_EQ(json_lines(warmed.out).at(0)["outcome"], "compiled") << warmed.out;
}

TEST_F(WarmTest, AnAlteredOrMissingHeaderFailsThatRequestWithItsReason) {
  if (!built("hip"))
    GTEST_SKIP() << "HIP backend not built";
  const std::string header = "#define SCALE 2.0f\n";
  std::ofstream(files.path() / "scale.h") << header;
  std::ofstream(files.path() / "scaled.hip")
      << "#include \"scale.h\"\nextern \"C\" __global__ void k(float* x) { x[0] *= SCALE; }\n";
  ASSERT_EQ(build("hip", {"--arch", "gfx90a", "--options", "-I " + files.path().string()},
                  {(files.path() / "scaled.hip").string(), k_kernels + "/saxpy.hip"}, app.path(),
                  record)
                .exit_code,
            0);
  fs::remove(files.path() / "scale.h"); // the replay must take the header from the record
  auto lines = test::file_lines(record);
  ASSERT_EQ(lines.size(), 2u);
  auto altered = nlohmann::json::parse(lines[0]);
  ASSERT_EQ(altered["headers"].size(), 1u);
  altered["headers"][0]["content"] = "#define SCALE 3.0f\n";
  auto missing = nlohmann::json::parse(lines[0]);
  missing["headers"] = nlohmann::json::array();
  missing["key"] = std::string(64, '0'); // another request, so that it is not a duplicate
  write_lines(record, {altered.dump(), missing.dump(), lines[1]});

  auto warmed = warm({"--into", into.path().string(), "--json"});
  EXPECT_EQ(warmed.exit_code, 1);
  std::map<std::string, std::string> outcomes;
  for (const auto& line : json_lines(warmed.out))
    if (line.contains("outcome"))
      outcomes[line["key"].get<std::string>()] =
          line["outcome"].get<std::string>() + " " + line["error"].dump();
  EXPECT_EQ(outcomes.size(), 3u) << warmed.out;
  for (const auto& bad : {altered, missing})
    EXPECT_NE(outcomes[bad["key"]].find("failed \"the request's key is not the recorded one"),
              std::string::npos)
        << outcomes[bad["key"]];
  // The one missing its header says which (the altered one cannot: the record holds no digest
  // of what its headers were, only the key of them all).
  EXPECT_NE(
      outcomes[missing["key"]].find(
          "the source includes \\\"scale.h\\\", which neither the record nor this machine has"),
      std::string::npos)
      << outcomes[missing["key"]];
  EXPECT_EQ(outcomes[nlohmann::json::parse(lines[1])["key"]].substr(0, 8), "compiled");
  // Each failure names the record's file and line: the altered request is on line 1, the one
  // missing its header on line 2.
  for (const char* line : {":1: ", ":2: "})
    EXPECT_NE(warmed.err.find("warm failed: " + record.string() + line +
                              "hip scaled.hip for gfx90a: the request's key"),
              std::string::npos)
        << warmed.err;
}

// An --arch target that is unknown or that the compiler cannot target is named, and the others
// are warmed all the same; the exit status says that something was refused.
TEST_F(WarmTest, ARefusedTargetIsNamedAndTheOthersAreWarmed) {
  if (!built("cuda"))
    GTEST_SKIP() << "CUDA backend not built";
  const std::string file = k_kernels + "/saxpy.cu";
  ASSERT_EQ(build("cuda", {"--arch", "sm_80"}, {file}, app.path(), record).exit_code, 0);
  auto warmed = warm({"--arch", "vax11,sm_1,sm_90", "--into", into.path().string(), "--json"});
  EXPECT_EQ(warmed.exit_code, 1) << warmed.err;
  EXPECT_NE(warmed.err.find("--arch vax11: unknown target"), std::string::npos) << warmed.err;
  EXPECT_NE(warmed.err.find("--arch sm_1: "), std::string::npos) << warmed.err;
  EXPECT_NE(warmed.err.find("can target sm_"), std::string::npos) << "lists the supported";
  std::vector<std::string> outcomes;
  for (const auto& line : json_lines(warmed.out))
    if (line.contains("outcome"))
      outcomes.push_back(line["target"].get<std::string>() + " " +
                         line["outcome"].get<std::string>());
  EXPECT_EQ(outcomes, (std::vector<std::string>{"sm_90 compiled"})) << warmed.out;
  EXPECT_EQ(stats(into.path(), "cuda")["compiles"], 1) << warmed.out;
}

TEST_F(WarmTest, UnknownTargetsAndMissingRecordsAreOneLineErrors) {
  std::ofstream(record) << "";
  if (built("cuda")) {
    auto sm1 = warm({"--backend", "cuda", "--arch", "sm_1"});
    EXPECT_EQ(sm1.exit_code, 1);
    EXPECT_NE(sm1.err.find("--arch sm_1"), std::string::npos) << sm1.err;
    EXPECT_NE(sm1.err.find("can target sm_"), std::string::npos) << "lists the supported";
  }
  auto unknown = warm({"--arch", "vax11"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("--arch vax11: unknown target"), std::string::npos) << unknown.err;
  auto absent = run_cli({"warm", (files.path() / "absent.jsonl").string()});
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_NE(absent.err.find("cannot read " + (files.path() / "absent.jsonl").string()),
            std::string::npos)
      << absent.err;
}

} // namespace
} // namespace jitcache
