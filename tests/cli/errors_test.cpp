// What a person sees when something is wrong: every command exits non-zero with one line naming
// the file and what is wrong; a usage error exits 2 with the command's usage; no parser's or
// library's exception text reaches the user.
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace jitcache {
namespace {
using test::first_line;
using test::k_kernels;
using test::k_options;

using test::json_lines;
using test::line_count;
using test::run_cli;

// Text that only a library's exception or a parser's diagnostics would print.
void expect_no_exception_text(const std::string& text) {
  for (const char* part : {"json.exception", "parse_error", "type_error", "what()", "terminate"})
    EXPECT_EQ(text.find(part), std::string::npos) << part << " in: " << text;
}

class CliErrorsTest : public ::testing::Test {
protected:
  std::map<std::string, std::string> env() {
    return {{"JITCACHE_DIR", dir.path().string()}, {"JITCACHE_OPENCL_STORE", "wait"}};
  }
  // A file that is text but no record: the first lines of a passwd file.
  std::string passwd() {
    const std::string file = (dir.path() / "passwd").string();
    std::ofstream(file) << "root:x:0:0:root:/root:/bin/bash\n"
                           "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                           "bin:x:2:2:bin:/bin:/usr/sbin/nologin\n";
    return file;
  }
  test::TempDir dir;
};

TEST_F(CliErrorsTest, AFileThatIsNoRecordIsOneLineNamingIt) {
  const std::string file = passwd();
  const std::vector<std::vector<std::string>> commands = {
      {"store", file}, {"warm", file}, {"tune", file, "--runner", "true"}};
  for (const auto& args : commands) {
    auto r = run_cli(args, env());
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
    EXPECT_EQ(line_count(r.err), 1u) << args[0] << ": " << r.err;
    EXPECT_EQ(first_line(r.err).rfind("jitcache: error: " + file + ":", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("not a request record"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << args[0] << ": " << r.out;
    expect_no_exception_text(r.err);
  }
}

TEST_F(CliErrorsTest, ABadLineOfARecordIsNamedInWords) {
  const std::string record = (dir.path() / "record.jsonl").string();
  auto built = run_cli({"build", "--backend", "opencl", "--options", k_options, "--record", record,
                        k_kernels + "/matmul.cl"},
                       env());
  ASSERT_EQ(built.exit_code, 0) << built.err;
  std::ofstream(record, std::ios::app) << "{\"format\": 1, \"backend\": 3}\nnot json\n";
  // store: the good line is stored (present), each bad one is dropped, saying why, exit 1.
  auto stored = run_cli({"store", "--json", record}, env());
  EXPECT_EQ(stored.exit_code, 1) << stored.err;
  const auto lines = json_lines(stored.out);
  ASSERT_EQ(lines.size(), 3u) << stored.out;
  EXPECT_EQ(lines[0]["outcome"], "present");
  EXPECT_EQ(lines[1]["outcome"], "dropped");
  EXPECT_EQ(lines[1]["why"], "line 2: not a request record: field \"backend\" is missing or of "
                             "the wrong type");
  EXPECT_EQ(lines[2]["why"], "line 3: not a request record: not JSON");
  expect_no_exception_text(stored.out + stored.err);
  // warm: a warning per bad line, FILE:LINE, in words.
  auto warmed = run_cli({"warm", "--jobs", "1", record}, env());
  EXPECT_NE(warmed.err.find(record + ":3: not a request record: not JSON; line skipped"),
            std::string::npos)
      << warmed.err;
  expect_no_exception_text(warmed.out + warmed.err);
}

TEST_F(CliErrorsTest, UsageErrorsExitTwoWithTheCommandsUsage) {
  const std::string file = passwd();
  struct Case {
    std::vector<std::string> args;
    std::string expect;  // in the error line
    std::string command; // whose usage follows
  };
  const Case cases[] = {
      {{"explode"}, "unknown command 'explode'", "jitcache"},
      {{}, "subcommand", "jitcache"},
      {{"tune", "lst"}, "tune: unknown command or record 'lst'", "jitcache tune"},
      {{"tune", file}, "tune RECORD needs --runner", "jitcache tune"},
      {{"build", "--backend", "opencl"}, "FILE is required", "jitcache build"},
      {{"build", "--backend", "opencl", "--frobnicate", "x.cl"}, "frobnicate", "jitcache build"},
      {{"build", "--backend", "metal", k_kernels + "/matmul.cl"},
       "unknown backend 'metal'",
       "jitcache build"},
      {{"prune", "--max-size", "banana"}, "--max-size banana", "jitcache prune"},
      {{"prune", "--max-size"}, "--max-size", "jitcache prune"},
      {{"store"}, "no FILE and no --pending folder", "jitcache store"},
      {{"store", "--wait", file}, "store --wait takes no FILE", "jitcache store"},
      {{"remote", "pingg"}, "remote: unknown command 'pingg'", "jitcache remote"},
      {{"list", "--bogus"}, "--bogus", "jitcache list"},
  };
  for (const Case& c : cases) {
    auto r = run_cli(c.args, env());
    const std::string what = c.args.empty() ? "(none)" : c.args[0];
    EXPECT_EQ(r.exit_code, 2) << what << ": " << r.err;
    EXPECT_EQ(first_line(r.err).rfind("jitcache: error: ", 0), 0u) << r.err;
    EXPECT_NE(first_line(r.err).find(c.expect), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("\nUsage: " + c.command + " "), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << what << ": " << r.out;
  }
}

TEST_F(CliErrorsTest, BuildJsonReportsAFailedFileToo) {
  const std::string bad = (dir.path() / "bad.cl").string();
  std::ofstream(bad) << "__kernel void f(__global int* x) { x[0] = nope; }\n";
  auto r = run_cli({"build", "--backend", "opencl", "--options", k_options, "--json",
                    k_kernels + "/matmul.cl", bad, "/nonexistent/k.cl", k_kernels + "/nbody.cl"},
                   env());
  EXPECT_EQ(r.exit_code, 1);
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0]["outcome"], "miss");
  EXPECT_EQ(lines[1]["file"], bad);
  EXPECT_EQ(lines[1]["backend"], "opencl");
  EXPECT_EQ(lines[1]["outcome"], "error");
  EXPECT_NE(lines[1]["error"].get<std::string>().find("CL_BUILD_PROGRAM_FAILURE"),
            std::string::npos)
      << lines[1];
  EXPECT_EQ(lines[2]["outcome"], "error");
  EXPECT_NE(lines[2]["error"].get<std::string>().find("cannot read /nonexistent/k.cl"),
            std::string::npos)
      << lines[2];
  EXPECT_EQ(lines[3]["outcome"], "miss") << "the files after a failed one are built";
  EXPECT_NE(r.err.find("undeclared identifier 'nope'"), std::string::npos) << "the log: " << r.err;
}

// `info` describes each backend as a process of its own would find it: a HIP that a process
// using PoCL cannot load is not called unloadable because `info` itself asked PoCL first.
TEST_F(CliErrorsTest, InfoSaysWhatIsTrueOfEachBackend) {
  auto r = run_cli({"info", "--json"}, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto info = nlohmann::json::parse(r.out);
  EXPECT_TRUE(info["backends"]["opencl"]["facts"].contains("device 0")) << r.out;
  for (const auto& [name, backend] : info["backends"].items()) {
    if (!backend.contains("facts"))
      continue; // not built
    for (const auto& [fact, value] : backend["facts"].items())
      EXPECT_EQ(value.get<std::string>().find("cannot be loaded into this process"),
                std::string::npos)
          << name << " " << fact << ": " << value;
  }
}

} // namespace
} // namespace jitcache
