// A system package copied over in place (`cp v1.jcpkg live.jcpkg; cp v2.jcpkg live.jcpkg` in a
// loop: cp truncates the file and writes it again) while processes open it and look kernels up
// in it: the CLI, an OpenCL process on PoCL and a loop of the C API's open, compile and close.
// A process that maps the file reads pages past its new end (SIGBUS) and bytes of the other
// version: every such read must be a miss (compiled, or found in another tier), never a crash
// and never a wrong binary. The number of runs is fixed; what the copying loop happens to hit
// changes from run to run, the assertions do not.
#include "tests/support/child_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/temp_dir.hpp"

#include <jitcache/jitcache.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

namespace jitcache {
namespace {
using test::k_kernels;
using test::read_file;

namespace fs = std::filesystem;
using test::json_lines;
using test::run_cli;
using test::run_process;

// Runs under sanitizers take 3-5 times as long: JITCACHE_REPLACE_RUNS scales them down.
int runs(int normal) {
  if (const char* scale = std::getenv("JITCACHE_REPLACE_RUNS"))
    return std::max(1, normal * std::atoi(scale) / 100);
  return normal;
}

// `cp v1 live; cp v2 live` for ever, with the real cp (it truncates the file and writes it again
// in place), until the object goes (its child is killed then).
class CopyLoop {
public:
  CopyLoop(const fs::path& v1, const fs::path& v2, const fs::path& live)
      : m_child([=] {
          ::execl("/bin/sh", "sh", "-c", "while :; do cp \"$1\" \"$3\"; cp \"$2\" \"$3\"; done",
                  "sh", v1.c_str(), v2.c_str(), live.c_str(), static_cast<char*>(nullptr));
          return 127;
        }) {}

private:
  test::ChildProcess m_child;
};

class PackageReplaceTest : public ::testing::Test {
protected:
  std::map<std::string, std::string> env(const fs::path& user, const std::string& system = ":") {
    return {{"JITCACHE_DIR", user.string()},
            {"JITCACHE_SYSTEM_PATH", system},
            {"JITCACHE_OPENCL_STORE", "wait"}};
  }
  // Exports what `user` holds for `backend` (and `arch`) to `package`.
  void export_to(const fs::path& user, const fs::path& package, const std::string& backend,
                 const std::string& arch = "") {
    std::vector<std::string> args{"export", "-o", package.string(), "--backend", backend};
    if (!arch.empty())
      args.insert(args.end(), {"--arch", arch});
    auto r = run_cli(args, env(user));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  test::TempDir m_dir;
};

#ifdef JITCACHE_TEST_HAVE_CUDA
// Two packages for sm_90 of different layouts: v1 holds saxpy, v2 saxpy and scale (so saxpy's
// entry lies elsewhere in it). Returns what building saxpy answered (its key and size).
nlohmann::json make_cuda_packages(const fs::path& dir) {
  const auto build = [&](const fs::path& user, std::vector<std::string> files) {
    std::vector<std::string> args{"build", "--backend", "cuda", "--arch", "sm_90", "--json"};
    args.insert(args.end(), files.begin(), files.end());
    auto r = run_cli(args, {{"JITCACHE_DIR", user.string()}, {"JITCACHE_SYSTEM_PATH", ":"}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto lines = json_lines(r.out);
    return lines.empty() ? nlohmann::json() : lines.front();
  };
  const nlohmann::json saxpy = build(dir / "u1", {k_kernels + "/saxpy.cu"});
  build(dir / "u2", {k_kernels + "/scale.cu", k_kernels + "/saxpy.cu"});
  const auto export_to = [&](const fs::path& user, const fs::path& package) {
    auto r = run_cli({"export", "-o", package.string(), "--backend", "cuda", "--arch", "sm_90"},
                     {{"JITCACHE_DIR", user.string()}, {"JITCACHE_SYSTEM_PATH", ":"}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  };
  export_to(dir / "u1", dir / "v1.jcpkg");
  export_to(dir / "u2", dir / "v2.jcpkg");
  return saxpy;
}

TEST_F(PackageReplaceTest, CliBuildsWhileThePackageIsCopiedOverNeverCrashNorServeAWrongBinary) {
  const nlohmann::json expected = make_cuda_packages(m_dir.path());
  ASSERT_TRUE(expected.contains("key"));
  const fs::path live = m_dir.path() / "live.jcpkg";
  fs::copy_file(m_dir.path() / "v1.jcpkg", live);
  const auto vars = env(m_dir.path() / "user", live.string());
  const std::vector<std::string> args{
      "build", "--backend", "cuda", "--arch", "sm_90", "--json", k_kernels + "/saxpy.cu"};
  std::map<std::string, int> tiers;
  {
    CopyLoop copying(m_dir.path() / "v1.jcpkg", m_dir.path() / "v2.jcpkg", live);
    for (int i = 0, n = runs(600); i < n; ++i) {
      auto r = run_cli(args, vars);
      ASSERT_EQ(r.exit_code, 0) << "run " << i << " (128 + 7 is SIGBUS): " << r.err;
      const auto lines = json_lines(r.out);
      ASSERT_EQ(lines.size(), 1u) << r.out;
      EXPECT_EQ(lines[0]["key"], expected["key"]) << r.out;
      EXPECT_EQ(lines[0]["bytes"], expected["bytes"]) << r.out;
      ++tiers[lines[0]["tier"].get<std::string>()];
    }
  }
  for (const auto& [tier, n] : tiers)
    std::printf("served by %s: %d\n", tier.c_str(), n);
  // The copying stopped: a whole package serves the kernel again.
  fs::copy_file(m_dir.path() / "v2.jcpkg", live, fs::copy_options::overwrite_existing);
  auto r = run_cli(args, vars);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_lines(r.out).at(0)["tier"], "system") << r.out;
}

// The C API's whole life in a loop (open with the package as system_path, compile, close), in a
// process of its own: the package is opened by each jitcache_open.
TEST_F(PackageReplaceTest, CApiLoopsWhileThePackageIsCopiedOverNeverCrashNorServeAWrongBinary) {
  make_cuda_packages(m_dir.path());
  const fs::path live = m_dir.path() / "live.jcpkg";
  fs::copy_file(m_dir.path() / "v1.jcpkg", live);
  // Named by its path, as the CLI names it: the same key as the packaged entry (its header is
  // found beside it).
  const std::string name = k_kernels + "/saxpy.cu";
  const std::string source = read_file(name);
  const std::string user = (m_dir.path() / "capi").string();
  const std::string system = live.string();
  const auto compile = [&](const char* system_path, std::string& binary, jitcache_info& info) {
    jitcache_settings settings;
    jitcache_settings_init(&settings);
    settings.dir = user.c_str();
    settings.system_path = system_path;
    jitcache_cache* cache = nullptr;
    if (jitcache_open(&settings, &cache) != JITCACHE_OK)
      return false;
    jitcache_program program{};
    program.source = source.c_str();
    program.source_len = source.size();
    program.name = name.c_str();
    void* bytes = nullptr;
    std::size_t size = 0;
    const bool ok = jitcache_cuda_compile(cache, "sm_90", &program, &bytes, &size, nullptr,
                                          &info) == JITCACHE_OK;
    if (ok)
      binary.assign(static_cast<const char*>(bytes), size);
    jitcache_free(bytes);
    jitcache_close(cache);
    return ok;
  };
  const int loops = runs(300);
  test::ChildProcess child([&] {
    std::string expected;
    jitcache_info info{};
    if (!compile(nullptr, expected, info) || expected.empty()) {
      std::fprintf(stderr, "%s\n", jitcache_last_error());
      return 2;
    }
    int system_hits = 0;
    for (int i = 0; i < loops; ++i) {
      std::string binary;
      if (!compile(system.c_str(), binary, info)) {
        std::fprintf(stderr, "loop %d: %s\n", i, jitcache_last_error());
        return 3;
      }
      if (binary != expected) {
        std::fprintf(stderr, "loop %d: a wrong binary from the %s tier\n", i, info.tier);
        return 4;
      }
      system_hits += std::string(info.tier) == "system";
    }
    std::fprintf(stderr, "system hits: %d of %d\n", system_hits, loops);
    return 0;
  });
  int status = 0;
  {
    CopyLoop copying(m_dir.path() / "v1.jcpkg", m_dir.path() / "v2.jcpkg", live);
    status = child.wait();
  }
  EXPECT_EQ(status, 0) << "(128 + 7 is SIGBUS) " << child.err();
  std::printf("%s", child.err().c_str());
}
#endif

// An OpenCL process on PoCL (the stress worker: builds its kernels through jitcache, runs each
// and checks every output element) again and again while its package is copied over.
TEST_F(PackageReplaceTest, OpenClProcessesWhileThePackageIsCopiedOverNeverCrashNorRunAWrongBinary) {
  const auto fill = [&](const fs::path& user, int kernels) {
    auto r = run_process({STRESS_WORKER, "1", std::to_string(kernels), "0"}, env(user));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  fill(m_dir.path() / "u1", 3);
  fill(m_dir.path() / "u2", 6);
  export_to(m_dir.path() / "u1", m_dir.path() / "v1.jcpkg", "opencl");
  export_to(m_dir.path() / "u2", m_dir.path() / "v2.jcpkg", "opencl");
  const fs::path live = m_dir.path() / "live.jcpkg";
  fs::copy_file(m_dir.path() / "v1.jcpkg", live);
  const auto vars = env(m_dir.path() / "user", live.string());
  std::map<std::string, int> tiers;
  {
    CopyLoop copying(m_dir.path() / "v1.jcpkg", m_dir.path() / "v2.jcpkg", live);
    for (int i = 0, n = runs(60); i < n; ++i) {
      auto r = run_process({STRESS_WORKER, std::to_string(i), "3", "0"}, vars);
      ASSERT_EQ(r.exit_code, 0) << "process " << i << " (128 + 7 is SIGBUS): " << r.err;
      const auto lines = json_lines(r.out);
      ASSERT_EQ(lines.size(), 3u) << r.out;
      for (const auto& line : lines) {
        EXPECT_TRUE(line["ok"].get<bool>()) << "process " << i << ": " << r.out;
        ++tiers[line["tier"].get<std::string>()];
      }
    }
  }
  for (const auto& [tier, n] : tiers)
    std::printf("served by %s: %d\n", tier.c_str(), n);
}

} // namespace
} // namespace jitcache
