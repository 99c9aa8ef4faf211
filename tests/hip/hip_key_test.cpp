// hipRTC's and comgr's identity and keys remembered in the user tier: a hit in a fresh process
// opens neither library, and what the identity or a key was built from changing is noticed.
#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_key.hpp"
#include "backends/hip/hip_runtime.hpp"
#include "core/engine/cache_core.hpp"
#include "core/engine/pipeline.hpp"
#include "core/engine/request.hpp"
#include "tests/hip/hip_test_support.hpp"
#include "tests/support/files.hpp"
#include "tests/support/process.hpp"
#include "tests/support/stamp_clock.hpp"
#include "tests/support/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

namespace jitcache::hip {
namespace {
using test::write_file;

namespace fs = std::filesystem;

Config in(const fs::path& dir, std::map<std::string, std::string> extra = {}) {
  extra.emplace("JITCACHE_DIR", dir.string());
  return Config::from_variables(extra);
}

// Files written within two seconds cannot vouch for their content (detail::too_recent): the
// clock that says so stands still, and tests move it past the files they wrote.
test::FakeStampClock stamp_clock;
void let_stamps_settle() {
  stamp_clock.settle();
}

// The pipeline's identity step in a Cache of its own (as a new process: the record comes from
// the user tier): whether the identity was remembered, after checking it is the real one.
bool remembered_with(const Config& config, const Toolchain& expected) {
  Cache cache(config);
  detail::core_of(cache).set_stamp_clock(stamp_clock.clock());
  bool remembered = false;
  const Program program;
  Runtime runtime(config, program, "gfx90a");
  auto tools = detail::identity_for_keys(cache, runtime, &remembered);
  EXPECT_TRUE(tools) << tools.error().message;
  EXPECT_TRUE(tools && decode_toolchain(*tools) == expected);
  return remembered;
}

TEST(HipRemembered, TheIdentityIsRememberedForTheLibrarySearchThatFoundIt) {
  test::TempDir dir;
  auto real = toolchain();
  ASSERT_TRUE(real) << real.error().message;
  EXPECT_FALSE(remembered_with(in(dir.path()), **real)) << "nothing remembered: both are opened";
  EXPECT_TRUE(remembered_with(in(dir.path()), **real)) << "the same library search: remembered";
  const Config other_search = in(dir.path(), {{"LD_LIBRARY_PATH", "/usr/lib"}});
  EXPECT_FALSE(remembered_with(other_search, **real)) << "another search may find other libraries";
  EXPECT_TRUE(remembered_with(other_search, **real));
  EXPECT_FALSE(remembered_with(in(dir.path(), {{"JITCACHE_DISABLE", "hip"}}), **real))
      << "no user tier for HIP";
}

TEST(HipRemembered, AChangeInALibraryPathDirectoryOpensTheLibrariesAgain) {
  test::TempDir dir;
  auto real = toolchain();
  ASSERT_TRUE(real) << real.error().message;
  const fs::path libraries = dir.path() / "libraries";
  fs::create_directories(libraries);
  let_stamps_settle();
  const Config config = in(dir.path() / "cache", {{"LD_LIBRARY_PATH", libraries.string()}});
  EXPECT_FALSE(remembered_with(config, **real));
  EXPECT_TRUE(remembered_with(config, **real));
  stamp_clock.stop();
  write_file(libraries / "libamdhip64.so.5", "not a library: dlopen would now find it first");
  EXPECT_FALSE(remembered_with(config, **real)) << "the directory's listing changed";
  EXPECT_FALSE(remembered_with(config, **real)) << "too recent to vouch: not remembered again";
}

TEST(HipRemembered, ToolchainsRoundTripThroughTheirStoredForm) {
  auto real = toolchain();
  ASSERT_TRUE(real) << real.error().message;
  const std::string stored = encode_toolchain(**real);
  const auto decoded = decode_toolchain(stored);
  EXPECT_TRUE(decoded && *decoded == **real);
  for (std::size_t size = 0; size < stored.size(); ++size) {
    const auto truncated = decode_toolchain(stored.substr(0, size));
    EXPECT_FALSE(truncated && *truncated == **real) << "truncated to " << size;
  }
}

TEST(HipRemembered, AnIdentityThatIsNotTheLibraryOpenedIsReplacedBeforeCompiling) {
  test::TempDir dir;
  auto real = toolchain();
  ASSERT_TRUE(real) << real.error().message;
  Toolchain fake = **real;
  fake.fields.front().second = "libamdhip64.so.5.0.0 (1 bytes)";
  {
    // As if another libamdhip64 had been found by the same search (stamps unchanged).
    Cache cache(in(dir.path()));
    bool remembered = false;
    ASSERT_TRUE(detail::recall_or_probe(
        detail::core_of(cache), "hip", library_search(), [](std::string_view) { return false; },
        [&]() -> Expected<detail::ProbedLibraries<std::string>> {
          return detail::ProbedLibraries<std::string>{encode_toolchain(fake),
                                                      {(**runtime()).runtime_file.path}};
        },
        &remembered));
  }
  ASSERT_TRUE(remembered_with(in(dir.path()), fake)) << "the planted identity is recalled";

  const Program program = test::hip_kernel("saxpy.hip");
  const Digest real_key = make_key(**real, "gfx90a", in(dir.path()), program).first.digest;
  {
    Cache cache(in(dir.path()));
    auto code = compile(cache, "gfx90a", program);
    ASSERT_TRUE(code) << code.error().message;
    EXPECT_EQ(code->info.outcome, Outcome::miss);
    EXPECT_EQ(code->info.key, real_key) << "compiled and stored under the real identity's key";
  }
  Cache cache(in(dir.path()));
  auto code = compile(cache, "gfx90a", program);
  ASSERT_TRUE(code) << code.error().message;
  EXPECT_EQ(code->info.outcome, Outcome::hit);
  EXPECT_EQ(code->info.key, real_key);
}

TEST(HipFreshProcess, AHitOpensNeitherTheHipRuntimeNorComgr) {
  test::TempDir dir;
  const std::string kernel = std::string(JITCACHE_KERNELS) + "/saxpy.hip";
  const std::vector<std::string> build{"build",  "--json", "--backend", "hip",
                                       "--arch", "gfx90a", kernel};
  const std::map<std::string, std::string> env{{"JITCACHE_DIR", dir.path().string()}};
  const auto miss = test::run_cli(build, env);
  ASSERT_EQ(miss.exit_code, 0) << miss.err;
  EXPECT_EQ(nlohmann::json::parse(miss.out)["outcome"], "miss");

  auto traced = env;
  traced["LD_DEBUG"] = "files"; // the dynamic loader names every library it loads on stderr
  const auto hit = test::run_cli(build, traced);
  ASSERT_EQ(hit.exit_code, 0) << hit.err;
  EXPECT_EQ(nlohmann::json::parse(hit.out)["outcome"], "hit");
  EXPECT_NE(hit.err.find("liblmdb"), std::string::npos) << "no loader trace:\n" << hit.err;
  EXPECT_EQ(hit.err.find("libamdhip64"), std::string::npos) << hit.err;
  EXPECT_EQ(hit.err.find("libamd_comgr"), std::string::npos) << hit.err;
}

// Keys of a program with include directories first/ then second/, through the pipeline's
// remembered-key step in a Cache of their own, as new processes would get them.
class HipManifest : public ::testing::Test {
protected:
  void SetUp() override {
    auto real = toolchain();
    ASSERT_TRUE(real) << real.error().message;
    tools = *real;
    fs::create_directories(dir.path() / "cache");
    fs::create_directories(dir.path() / "first");
    program.source = "#include <a.h>\n#include \"missing.h\"\n"
                     "extern \"C\" __global__ void k(int* p) { *p = A; }\n";
    program.options = {"-I" + (dir.path() / "first").string(), "-I",
                       (dir.path() / "second").string()};
  }
  detail::GuardedKey key() {
    Cache cache(in(dir.path() / "cache"));
    detail::core_of(cache).set_stamp_clock(stamp_clock.clock());
    Runtime runtime(cache.config(), program, "gfx90a");
    const std::string identity = encode_toolchain(*tools);
    EXPECT_TRUE(runtime.select(identity));
    return *detail::remembered_key(cache, runtime, identity, "gfx90a").settle();
  }
  Digest built() const { return make_key(*tools, "gfx90a", Config(), program).first.digest; }

  test::TempDir dir;
  const Toolchain* tools = nullptr;
  Program program;
};

TEST_F(HipManifest, AKeyIsRecalledUntilAHeaderItWasBuiltFromChanges) {
  write_file(dir.path() / "second/a.h", "#include \"b.h\"\n#define A B\n");
  write_file(dir.path() / "second/b.h", "#define B 1\n");
  let_stamps_settle();

  const auto first = key();
  EXPECT_FALSE(first.recalled);
  ASSERT_TRUE(first.guards);
  EXPECT_EQ(first.key.digest, built());
  const auto second = key();
  EXPECT_TRUE(second.recalled) << "unchanged files: the key comes from the manifest";
  EXPECT_EQ(second.key.digest, first.key.digest);
  EXPECT_EQ(second.key.stored_fields, first.key.stored_fields);

  // Each change is made to a remembered manifest, and must give the key the files now give.
  const auto changes_the_key = [&](const char* what, const std::function<void()>& change) {
    SCOPED_TRACE(what);
    let_stamps_settle();
    const Digest before = key().key.digest;
    EXPECT_TRUE(key().recalled);
    change();
    const auto after = key();
    EXPECT_FALSE(after.recalled);
    EXPECT_NE(after.key.digest, before);
    EXPECT_EQ(after.key.digest, built());
  };
  changes_the_key("a header edited (same size)",
                  [&] { write_file(dir.path() / "second/b.h", "#define B 2\n"); });
  changes_the_key("a header created earlier in the include path shadows one",
                  [&] { write_file(dir.path() / "first/a.h", "#define A 3\n"); });
  changes_the_key("an include that resolved nowhere appears",
                  [&] { write_file(dir.path() / "second/missing.h", "int now_here;\n"); });
  changes_the_key("a header removed", [&] { fs::remove(dir.path() / "first/a.h"); });
  program.headers.push_back({"extra.h", "int extra;"});
  EXPECT_FALSE(key().recalled) << "another in-memory header is another request";
}

} // namespace
} // namespace jitcache::hip
