// Packages through the CLI with no GPU: export from a user tier, serve from JITCACHE_SYSTEM_PATH
// with zero compiles and nothing written to the user tier, import, list, and bad input.
#include "core/tiers/packages/package_format.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/temp_dir.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace jitcache {
namespace {
using test::k_kernels;

namespace fs = std::filesystem;
using test::json_lines;
using test::run_cli;

// One request of the end-to-end run: a backend, its target and the files built for it.
struct Request {
  std::string backend;
  std::string arch; ///< empty: the device's own (PoCL)
  std::vector<std::string> files;
  std::string package; ///< the file it is exported to
};

std::vector<Request> requests() {
  std::vector<Request> all;
#ifdef JITCACHE_TEST_HAVE_CUDA
  for (const char* arch : {"sm_80", "sm_90"})
    all.push_back({"cuda",
                   arch,
                   {k_kernels + "/saxpy.cu", k_kernels + "/scale.cu"},
                   std::string("cuda-") + arch + ".jcpkg"});
#endif
#ifdef JITCACHE_TEST_HAVE_HIP
  for (const char* arch : {"gfx90a", "gfx1030"})
    all.push_back({"hip", arch, {k_kernels + "/saxpy.hip"}, std::string("hip-") + arch + ".jcpkg"});
#endif
  all.push_back({"opencl", "", {k_kernels + "/vector_ops.cl"}, "opencl-pocl.jcpkg"});
  return all;
}

class PackagesCliTest : public ::testing::Test {
protected:
  std::map<std::string, std::string> env(const fs::path& user, const std::string& system = ":") {
    return {{"JITCACHE_DIR", user.string()},
            {"JITCACHE_SYSTEM_PATH", system},
            {"JITCACHE_OPENCL_STORE", "wait"}};
  }
  test::ProcessResult build(const Request& r, const std::map<std::string, std::string>& vars,
                            const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"build", "--backend", r.backend, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    if (!r.arch.empty())
      args.insert(args.end(), {"--arch", r.arch});
    if (r.backend == "opencl")
      args.insert(args.end(), {"--options", "-I " + k_kernels});
    args.insert(args.end(), r.files.begin(), r.files.end());
    return run_cli(args, vars);
  }
  std::size_t user_entries(const fs::path& user) {
    auto r = run_cli({"list", "--json"}, env(user));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json_lines(r.out).size();
  }
  // Builds the CUDA sample for sm_80 (or, without CUDA, the OpenCL one) into `user` and exports
  // it to `package`.
  Request exported(const fs::path& user, const fs::path& package) {
    Request r = requests().front();
    auto built = build(r, env(user));
    EXPECT_EQ(built.exit_code, 0) << built.err;
    std::vector<std::string> args{"export", "-o", package.string(), "--backend", r.backend};
    if (!r.arch.empty())
      args.insert(args.end(), {"--arch", r.arch});
    auto out = run_cli(args, env(user));
    EXPECT_EQ(out.exit_code, 0) << out.err;
    return r;
  }
  test::TempDir dir;
};

// The whole chain: the application's builds recorded (one target per backend), the record
// warmed for every target (sm_80,sm_90; gfx90a,gfx1030; PoCL), one package exported per target,
// and an empty user tier served by them alone.
TEST_F(PackagesCliTest, RecordedWarmedAndExportedPackagesServeAnEmptyUserTierWithZeroCompiles) {
  const fs::path app = dir.path() / "app", maker = dir.path() / "maker";
  const fs::path user = dir.path() / "user", record = dir.path() / "record.jsonl";
  const fs::path packages = dir.path() / "packages";
  fs::create_directory(packages);
  const auto all = requests();
  std::map<std::string, std::string> targets; // backend -> the --arch list warm is given
  for (const Request& r : all) {
    if (!targets.count(r.backend)) { // recorded for its first target only
      auto built = build(r, env(app), {"--record", record.string()});
      ASSERT_EQ(built.exit_code, 0) << built.err;
    }
    std::string& list = targets[r.backend];
    if (!r.arch.empty())
      list += (list.empty() ? "" : ",") + r.arch;
  }
  for (const auto& [backend, list] : targets) {
    std::vector<std::string> args{"warm",   record.string(), "--backend", backend,
                                  "--into", maker.string(),  "--json"};
    if (!list.empty())
      args.insert(args.end(), {"--arch", list});
    auto warmed = run_cli(args, env(app));
    ASSERT_EQ(warmed.exit_code, 0) << warmed.out << warmed.err;
  }
  for (const Request& r : all) {
    std::vector<std::string> args{"export",    "-o",      (packages / r.package).string(),
                                  "--backend", r.backend, "--json"};
    if (r.arch.empty())
      args.insert(args.end(), {"--device", "0"});
    else
      args.insert(args.end(), {"--arch", r.arch});
    auto out = run_cli(args, env(maker));
    ASSERT_EQ(out.exit_code, 0) << out.err;
    const auto line = json_lines(out.out).at(0);
    EXPECT_EQ(line["entries"], r.files.size());
    EXPECT_EQ(line["backend"], r.backend);
    if (!r.arch.empty()) {
      EXPECT_EQ(line["target"], r.arch);
      EXPECT_EQ(line["suggested_name"], r.package);
    }
  }

  // A new user tier: every build is a hit from the system tier; nothing compiled or stored.
  for (const Request& r : all) {
    auto built = build(r, env(user, packages.string()));
    ASSERT_EQ(built.exit_code, 0) << built.err;
    EXPECT_EQ(built.err.find("warning"), std::string::npos) << built.err;
    for (const auto& line : json_lines(built.out)) {
      EXPECT_EQ(line["outcome"], "hit") << line;
      EXPECT_EQ(line["tier"], "system") << line;
    }
  }
  EXPECT_EQ(user_entries(user), 0u);
  auto stats = run_cli({"stats", "--json"}, env(user));
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  for (const auto& line : json_lines(stats.out)) {
    if (line["backend"] == "total")
      continue;
    EXPECT_EQ(line["compiles"], 0) << line;
    EXPECT_EQ(line["misses"], 0) << line;
    std::size_t files = 0;
    for (const Request& r : all)
      files += r.backend == line["backend"] ? r.files.size() : 0;
    EXPECT_EQ(line["hits"], files) << line;
    if (files) {
      EXPECT_EQ(line["hits_by_tier"]["system"], files) << line;
    }
  }

  // `packages` lists each, and the PoCL device is served.
  auto listed = run_cli({"packages", "--json"}, env(user, packages.string()));
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::size_t seen = 0;
  bool pocl_served = false;
  for (const auto& line : json_lines(listed.out)) {
    if (line.contains("tier")) {
      EXPECT_EQ(line["tier"], "system");
      EXPECT_GT(line["entries"].get<int>(), 0);
      EXPECT_FALSE(line["jitcache_version"].get<std::string>().empty());
      ++seen;
    } else if (line["backend"] == "opencl" && line["device"] == 0) {
      pocl_served = line["package"] == (packages / "opencl-pocl.jcpkg").string();
    }
  }
  EXPECT_EQ(seen, all.size());
  EXPECT_TRUE(pocl_served) << listed.out;

  // Imported, the same builds hit from the user tier with no package around.
  for (const Request& r : all) {
    auto imported = run_cli({"import", (packages / r.package).string(), "--json"}, env(user));
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    EXPECT_EQ(json_lines(imported.out).at(0)["imported"], r.files.size());
  }
  for (const Request& r : all) {
    auto built = build(r, env(user));
    ASSERT_EQ(built.exit_code, 0) << built.err;
    for (const auto& line : json_lines(built.out))
      EXPECT_EQ(line["tier"], "user") << line;
  }
}

TEST_F(PackagesCliTest, DamagedOrMissingPackagesAreRefusedNamingThem) {
  const fs::path maker = dir.path() / "maker", user = dir.path() / "user";
  const fs::path package = dir.path() / "p.jcpkg";
  const Request r = exported(maker, package);
  std::string bytes;
  {
    std::ifstream in(package, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const fs::path truncated = dir.path() / "truncated.jcpkg";
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);

  auto imported = run_cli({"import", truncated.string()}, env(user));
  EXPECT_EQ(imported.exit_code, 1);
  EXPECT_NE(imported.err.find(truncated.string()), std::string::npos) << imported.err;
  EXPECT_NE(imported.err.find("nothing imported"), std::string::npos) << imported.err;
  imported = run_cli({"import", dir.path().string()}, env(user));
  EXPECT_EQ(imported.exit_code, 1);
  EXPECT_NE(imported.err.find("is a directory"), std::string::npos) << imported.err;
  EXPECT_EQ(user_entries(user), 0u);

  // On the system path: each bad one warned about once, by name; the good one still serves.
  const fs::path missing = dir.path() / "missing.jcpkg";
  const std::string path = missing.string() + ":" + truncated.string() + ":" + package.string();
  auto built = build(r, env(user, path));
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_NE(built.err.find(missing.string() + " does not exist"), std::string::npos) << built.err;
  EXPECT_NE(built.err.find(truncated.string() + ": package is"), std::string::npos) << built.err;
  for (const auto& line : json_lines(built.out))
    EXPECT_EQ(line["tier"], "system") << line;
}

// `import` of a file that is not there names it; `packages` names each present device that no
// package serves, and the file name that would serve it, in text and in JSON.
TEST_F(PackagesCliTest, AMissingImportAndADeviceWithoutAPackageAreNamed) {
  const fs::path user = dir.path() / "user", missing = dir.path() / "missing.jcpkg";
  auto imported = run_cli({"import", missing.string()}, env(user));
  EXPECT_EQ(imported.exit_code, 1);
  EXPECT_NE(imported.err.find(missing.string() + ": No such file"), std::string::npos)
      << imported.err;
  EXPECT_EQ(user_entries(user), 0u);

  auto listed = run_cli({"packages"}, env(user, missing.string()));
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.err.find(missing.string() + " does not exist"), std::string::npos) << listed.err;
  EXPECT_NE(listed.out.find("opencl device 0 ("), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("): no package (one would be named opencl-"), std::string::npos)
      << listed.out;
  auto json = run_cli({"packages", "--json"}, env(user));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  bool unserved = false;
  for (const auto& line : json_lines(json.out))
    unserved |= line["backend"] == "opencl" && line["device"] == 0 && line["package"].is_null();
  EXPECT_TRUE(unserved) << json.out;
}

// `packages` shows how many named records each package holds, in text and in JSON; a package of
// records alone is listed like any other.
TEST_F(PackagesCliTest, PackagesShowsTheRecordsEachHolds) {
  const fs::path user = dir.path() / "user", package = dir.path() / "cuda-sm_90.jcpkg";
  std::vector<detail::PackageRecord> records;
  for (const char* name : {"one", "two", "three"})
    records.push_back({Digest::of(name), std::string("the record ") + name});
  ASSERT_TRUE(detail::write_package(package, {"cuda", "sm_90", "arch=sm_90"}, {}, records));
  auto json = run_cli({"packages", "--json"}, env(user, package.string()));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  bool listed = false;
  for (const auto& line : json_lines(json.out))
    if (line.contains("tier")) {
      listed = true;
      EXPECT_EQ(line["package"], package.string()) << line;
      EXPECT_EQ(line["entries"], 0) << line;
      EXPECT_EQ(line["records"], 3) << line;
    }
  EXPECT_TRUE(listed) << json.out;
  auto text = run_cli({"packages"}, env(user, package.string()));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(package.string() + "  cuda sm_90, 0 entries, 3 records, "),
            std::string::npos)
      << text.out;
}

TEST_F(PackagesCliTest, ExportRefusesNothingAndSeveralTargets) {
  const fs::path user = dir.path() / "user";
  auto none = run_cli({"export", "-o", (dir.path() / "x.jcpkg").string()}, env(user));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("nothing exported"), std::string::npos) << none.err;
#ifdef JITCACHE_TEST_HAVE_CUDA
  for (const Request& r : requests()) {
    if (r.backend == "cuda") {
      ASSERT_EQ(build(r, env(user)).exit_code, 0);
    }
  }
  auto several =
      run_cli({"export", "-o", (dir.path() / "x.jcpkg").string(), "--backend", "cuda"}, env(user));
  EXPECT_EQ(several.exit_code, 1);
  EXPECT_NE(several.err.find("cuda sm_80 (2 entries), cuda sm_90 (2 entries)"), std::string::npos)
      << several.err;
  EXPECT_FALSE(fs::exists(dir.path() / "x.jcpkg"));
#endif
}

// From the second build on, the request's key is recalled from the manifest the first one
// remembered (its fields only in their stored form): the package still serves, and no notice
// says that it does not.
TEST_F(PackagesCliTest, NoNoticeWhenAServedRequestsKeyIsRecalled) {
  const fs::path maker = dir.path() / "maker", user = dir.path() / "user";
  const fs::path package = dir.path() / "opencl-pocl.jcpkg";
  const Request r = requests().back();
  ASSERT_EQ(r.backend, "opencl");
  ASSERT_EQ(build(r, env(maker)).exit_code, 0);
  auto out = run_cli({"export", "-o", package.string(), "--backend", "opencl", "--device", "0"},
                     env(maker));
  ASSERT_EQ(out.exit_code, 0) << out.err;
  for (int run = 1; run <= 3; ++run) {
    auto built = build(r, env(user, package.string()));
    ASSERT_EQ(built.exit_code, 0) << built.err;
    EXPECT_EQ(built.err.find("no opencl package"), std::string::npos) << run << ": " << built.err;
    for (const auto& line : json_lines(built.out))
      EXPECT_EQ(line["tier"], "system") << run << ": " << line;
  }
}

// Runs whose every request a package served make no LMDB environment: their counters go to the
// user tier's use log, which `stats` reads, and `stats --zero` and `clear` empty.
TEST_F(PackagesCliTest, PackageOnlyRunsAreCountedWithoutAUserTierAndZeroedAndCleared) {
  const fs::path maker = dir.path() / "maker", user = dir.path() / "user";
  const fs::path package = dir.path() / "opencl-pocl.jcpkg", kernel = dir.path() / "twice.cl";
  std::ofstream(kernel) << "__kernel void twice(__global float* x) { x[get_global_id(0)] *= 2; }\n";
  const auto build_kernel = [&](const std::map<std::string, std::string>& vars) {
    auto built = run_cli({"build", "--backend", "opencl", "--json", kernel.string()}, vars);
    EXPECT_EQ(built.exit_code, 0) << built.err;
    return json_lines(built.out).at(0)["tier"];
  };
  ASSERT_EQ(build_kernel(env(maker)), "compile");
  auto out = run_cli({"export", "-o", package.string(), "--backend", "opencl", "--device", "0"},
                     env(maker));
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const auto system_hits = [&] {
    auto stats = run_cli({"stats", "--json"}, env(user, package.string()));
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    return json_lines(stats.out).at(0)["hits_by_tier"].value("system", 0);
  };
  for (int run = 0; run < 3; ++run)
    EXPECT_EQ(build_kernel(env(user, package.string())), "system");
  EXPECT_FALSE(fs::exists(user / "v1" / "data.mdb"));
  EXPECT_FALSE(fs::exists(user / "v1" / "lock.mdb"));
  EXPECT_TRUE(fs::is_regular_file(user / "v1" / "uses.log"));
  EXPECT_EQ(system_hits(), 3);
  { // an append stopped mid-way holds the log: its counters cannot be dropped, and are not
    const int held = ::open((user / "v1" / "uses.log").c_str(), O_RDONLY);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_SH), 0);
    auto refused = run_cli({"stats", "--zero"}, env(user, package.string()));
    auto kept = run_cli({"clear"}, env(user, package.string()));
    ::close(held);
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_NE(refused.err.find("held by another process"), std::string::npos) << refused.err;
    EXPECT_EQ(kept.exit_code, 1) << kept.out;
  }
  auto read_only = env(user, package.string());
  read_only["JITCACHE_READONLY"] = "1";
  EXPECT_EQ(run_cli({"clear"}, read_only).exit_code, 1) << "there are counters to clear";
  EXPECT_EQ(system_hits(), 3);
  auto zeroed = run_cli({"stats", "--zero"}, env(user, package.string()));
  ASSERT_EQ(zeroed.exit_code, 0) << zeroed.err;
  EXPECT_EQ(system_hits(), 0);
  EXPECT_EQ(build_kernel(env(user, package.string())), "system");
  EXPECT_EQ(system_hits(), 1);
  auto cleared = run_cli({"clear", "--json"}, env(user, package.string()));
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_EQ(json_lines(cleared.out).at(0)["cleared"], 0);
  EXPECT_EQ(system_hits(), 0);
  auto nothing = run_cli({"clear"}, read_only);
  EXPECT_EQ(nothing.exit_code, 0) << "nothing left to clear: " << nothing.err;
  EXPECT_NE(nothing.out.find("nothing to clear"), std::string::npos) << nothing.out;
  EXPECT_FALSE(fs::exists(user / "v1" / "data.mdb")) << "nothing made by reading or clearing";
}

#ifdef JITCACHE_TEST_HAVE_CUDA
TEST_F(PackagesCliTest, NoticeNamesTheTargetWithoutAPackageAndWhatIsInstalled) {
  const fs::path maker = dir.path() / "maker", user = dir.path() / "user";
  const fs::path packages = dir.path() / "packages";
  fs::create_directory(packages);
  exported(maker, packages / "cuda-sm_80.jcpkg");
  Request sm_90{"cuda", "sm_90", {k_kernels + "/saxpy.cu", k_kernels + "/scale.cu"}, ""};
  auto built = build(sm_90, env(user, packages.string()));
  ASSERT_EQ(built.exit_code, 0) << built.err;
  const std::string notice = "no cuda package for sm_90 in the system tier; installed: "
                             "cuda-sm_80.jcpkg (sm_80, 2 entries)";
  EXPECT_NE(built.err.find(notice), std::string::npos) << built.err;
  EXPECT_EQ(built.err.find(notice), built.err.rfind(notice)) << built.err;
}
#endif

} // namespace
} // namespace jitcache
