// A package made on one machine serves a request on another (here: a user tier that has never
// seen it) without reading the headers a package manager installed, and never after one of
// them changed, whatever its size and times say. The real CLI and NVRTC, offline (--arch).
#include "tests/support/file_times.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/open_count.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wheel_record.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <thread>
#include <vector>

namespace jitcache {
namespace {

namespace fs = std::filesystem;
using test::json_lines;
using test::names;
using test::run_cli;
using test::write_file;

class PortablePackageTest : public ::testing::Test {
protected:
  void SetUp() override {
#ifndef JITCACHE_TEST_HAVE_CUDA
    GTEST_SKIP() << "CUDA backend not built";
#endif
    // A toolkit installed from a wheel: its header, then its RECORD (as pip writes them); an
    // application header no package manager knows; the kernel.
    write_file(include() / "tk.h", k_tk);
    write_file(site() / "tk-1.0.dist-info" / "RECORD",
               test::record_line("tk/include/tk.h", k_tk) + "tk-1.0.dist-info/RECORD,,\n");
    write_file(app() / "app.h", "#define APP_SCALE 2\n");
    write_file(app() / "probe.cu", "#include <tk.h>\n#include \"app.h\"\n"
                                   "extern \"C\" __global__ void probe(int* out) {\n"
                                   "  *out = TK_VALUE * APP_SCALE;\n}\n");
    // Stamps old enough to vouch (the exporting machine remembers the key only then).
    test::until_settled(include() / "tk.h");
    test::until_settled(app() / "probe.cu");
  }
  fs::path site() const {
    return files.path() / "site";
  }
  fs::path include() const {
    return site() / "tk" / "include";
  }
  fs::path app() const {
    return files.path() / "app";
  }
  fs::path package_dir() const {
    return files.path() / "packages";
  }

  // `jitcache build` of the kernel with user tier `cache` (and the packages, when `packaged`).
  nlohmann::json build(const fs::path& cache, bool packaged) {
    std::map<std::string, std::string> env{{"JITCACHE_DIR", cache.string()}};
    if (packaged)
      env["JITCACHE_SYSTEM_PATH"] = package_dir().string();
    auto built = run_cli({"build", "--backend", "cuda", "--arch", "sm_80", "--json", "--options",
                          "-I " + app().string() + " -I " + include().string(),
                          (app() / "probe.cu").string()},
                         env);
    EXPECT_EQ(built.exit_code, 0) << built.err;
    return built.exit_code == 0 ? json_lines(built.out).at(0) : nlohmann::json{};
  }

  // Builds on "the first machine" and exports its package; returns the key.
  std::string exported() {
    fs::create_directories(package_dir());
    const auto first = build(first_cache.path(), false);
    EXPECT_EQ(first["outcome"], "miss");
    auto out = run_cli({"export", "--backend", "cuda", "--arch", "sm_80", "--json", "-o",
                        (package_dir() / "cuda-sm_80.jcpkg").string()},
                       {{"JITCACHE_DIR", first_cache.path().string()}});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    if (out.exit_code != 0)
      return {};
    const auto summary = json_lines(out.out).at(0);
    EXPECT_EQ(summary["manifests"], 1) << out.out;
    EXPECT_EQ(summary["headers_vouched"], 1) << "tk.h, by its RECORD: " << out.out;
    EXPECT_EQ(summary["headers_hashed"], 1) << "app.h: " << out.out;
    return first["key"];
  }

  const std::string k_tk = "#pragma once\n#define TK_VALUE 21\n";
  test::TempDir files, first_cache;
};

TEST_F(PortablePackageTest, ANewMachineTakesThePackagedKeyWithoutReadingInstalledHeaders) {
  const std::string key = exported();
  test::TempDir fresh;
  test::OpenCount toolkit(include()), application(app());
  ASSERT_TRUE(toolkit.watching() && application.watching());
  for (int run = 0; run < 2; ++run) {
    const auto hit = build(fresh.path(), true);
    EXPECT_EQ(hit["outcome"], "hit") << hit.dump();
    EXPECT_EQ(hit["tier"], "system");
    EXPECT_EQ(hit["key"], key);
    const auto opened = toolkit.take();
    EXPECT_TRUE(opened.empty()) << "run " << run << " opened " << names(opened);
  }
  const auto read = application.take();
  EXPECT_EQ(read.count("app.h"), 1u) << "read once, to prove it; then remembered: " << names(read);
}

// 8 processes of a new machine at once, then 30 one after another: each a hit with the packaged
// key, none reading an installed header (the first ones prove the manifest, each for itself;
// the later ones take this machine's).
TEST_F(PortablePackageTest, ManyProcessesAtOnceAndInARowReadNoInstalledHeader) {
  const std::string key = exported();
  test::TempDir fresh;
  test::OpenCount toolkit(include());
  ASSERT_TRUE(toolkit.watching());
  constexpr int k_at_once = 8, k_in_a_row = 30;
  std::vector<nlohmann::json> answers(k_at_once);
  std::vector<std::thread> threads;
  for (int i = 0; i < k_at_once; ++i)
    threads.emplace_back([&, i] { answers[i] = build(fresh.path(), true); });
  for (auto& thread : threads)
    thread.join();
  for (int i = 0; i < k_in_a_row; ++i)
    answers.push_back(build(fresh.path(), true));
  for (const auto& answer : answers) {
    EXPECT_EQ(answer["outcome"], "hit") << answer.dump();
    EXPECT_EQ(answer["key"], key);
  }
  const auto opened = toolkit.take();
  EXPECT_TRUE(opened.empty()) << names(opened);
}

// `jitcache import` proves the manifests and keeps them as this machine's: the first request
// after it reads no installed header either.
TEST_F(PortablePackageTest, AnImportedPackagesFirstHitReadsNoInstalledHeader) {
  const std::string key = exported();
  test::TempDir fresh;
  const std::map<std::string, std::string> env{{"JITCACHE_DIR", fresh.path().string()}};
  auto imported = run_cli({"import", (package_dir() / "cuda-sm_80.jcpkg").string(), "--json"}, env);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const auto summary = json_lines(imported.out).at(0);
  EXPECT_EQ(summary["imported"], 1);
  EXPECT_EQ(summary["manifests"], 1) << imported.out;
  EXPECT_EQ(summary["manifests_unproven"], 0);
  test::OpenCount toolkit(include()), application(app());
  ASSERT_TRUE(toolkit.watching() && application.watching());
  const auto hit = build(fresh.path(), false);
  EXPECT_EQ(hit["outcome"], "hit") << hit.dump();
  EXPECT_EQ(hit["tier"], "user");
  EXPECT_EQ(hit["key"], key);
  const auto opened = toolkit.take();
  EXPECT_TRUE(opened.empty()) << names(opened);
  EXPECT_EQ(application.take().count("app.h"), 0u) << "proven by the import";
}

// A header changed after the package was made: import keeps the entry (its key is another
// request's now) but not the manifest, and the request compiles.
TEST_F(PortablePackageTest, AnImportDoesNotProveAManifestWhoseHeaderChanged) {
  const std::string key = exported();
  test::until_ctime_passes(site() / "tk-1.0.dist-info" / "RECORD", files.path() / "scratch");
  std::string changed = k_tk;
  changed[changed.find("21")] = '4';
  test::rewrite_keeping_mtime(include() / "tk.h", changed);
  test::TempDir fresh;
  const std::map<std::string, std::string> env{{"JITCACHE_DIR", fresh.path().string()}};
  auto imported = run_cli({"import", (package_dir() / "cuda-sm_80.jcpkg").string(), "--json"}, env);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(json_lines(imported.out).at(0)["manifests_unproven"], 1) << imported.out;
  const auto built = build(fresh.path(), false);
  EXPECT_EQ(built["outcome"], "miss") << built.dump();
  EXPECT_NE(built["key"], key);
}

// A package whose manifest record is damaged (its last byte: the records come last) still
// serves its entry, with the key built from the headers: from the system tier, and through an
// import, which leaves the record out (one warning, exit 1, as for a damaged entry).
TEST_F(PortablePackageTest, ADamagedManifestStillServesTheEntryFromTheHeaders) {
  const std::string key = exported();
  const fs::path package = package_dir() / "cuda-sm_80.jcpkg";
  {
    std::fstream file(package, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-1, std::ios::end);
    const char last = static_cast<char>(file.get());
    file.seekp(-1, std::ios::end);
    file.put(static_cast<char>(last ^ 0x5a));
  }
  test::TempDir fresh, imported_into;
  test::OpenCount toolkit(include());
  ASSERT_TRUE(toolkit.watching());
  const auto hit = build(fresh.path(), true);
  EXPECT_EQ(hit["outcome"], "hit") << hit.dump();
  EXPECT_EQ(hit["tier"], "system");
  EXPECT_EQ(hit["key"], key);
  EXPECT_EQ(toolkit.take().count("tk.h"), 1u) << "the key was built from the header";

  const std::map<std::string, std::string> env{{"JITCACHE_DIR", imported_into.path().string()}};
  auto imported = run_cli({"import", package.string(), "--json"}, env);
  EXPECT_EQ(imported.exit_code, 1) << imported.out << imported.err;
  EXPECT_NE(imported.err.find("record"), std::string::npos) << imported.err;
  const auto summary = json_lines(imported.out).at(0);
  EXPECT_EQ(summary["imported"], 1);
  EXPECT_EQ(summary["damaged"], 1);
  EXPECT_EQ(summary["manifests"], 0);
  const auto after = build(imported_into.path(), false);
  EXPECT_EQ(after["outcome"], "hit") << after.dump();
  EXPECT_EQ(after["key"], key);
}

TEST_F(PortablePackageTest, AHeaderChangedWithItsSizeAndTimeKeptIsNotServed) {
  const std::string key = exported();
  test::until_ctime_passes(site() / "tk-1.0.dist-info" / "RECORD", files.path() / "scratch");
  std::string changed = k_tk;
  changed[changed.find("21")] = '4'; // TK_VALUE 41: same size
  test::rewrite_keeping_mtime(include() / "tk.h", changed);
  test::TempDir fresh;
  const auto built = build(fresh.path(), true);
  EXPECT_EQ(built["outcome"], "miss") << built.dump();
  EXPECT_NE(built["key"], key);
}

TEST_F(PortablePackageTest, AHeaderWithANewTimeIsNotServed) {
  const std::string key = exported();
  test::until_ctime_passes(site() / "tk-1.0.dist-info" / "RECORD", files.path() / "scratch");
  write_file(include() / "tk.h", "#pragma once\n#define TK_VALUE 42\n");
  test::TempDir fresh;
  const auto built = build(fresh.path(), true);
  EXPECT_EQ(built["outcome"], "miss") << built.dump();
  EXPECT_NE(built["key"], key);
}

// The same bytes written again after the record (a new ctime and modification time): read,
// found equal, served.
TEST_F(PortablePackageTest, AHeaderRewrittenWithTheSameBytesIsReadAndServed) {
  const std::string key = exported();
  test::until_ctime_passes(site() / "tk-1.0.dist-info" / "RECORD", files.path() / "scratch");
  write_file(include() / "tk.h", k_tk);
  test::TempDir fresh;
  const auto built = build(fresh.path(), true);
  EXPECT_EQ(built["outcome"], "hit") << built.dump();
  EXPECT_EQ(built["key"], key);
}

} // namespace
} // namespace jitcache
