// Exact keys on PoCL: header dependencies, options, toolchain identity, and `jitcache explain`.
#include <jitcache/opencl.hpp>

#include "backends/opencl/opencl_key.hpp"
#include "tests/support/files.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

namespace jitcache {
namespace {
using test::write_file;

namespace fs = std::filesystem;

class ExactKeysTest : public ::testing::Test {
protected:
  void SetUp() override {
    cl_platform_id platform = nullptr;
    ASSERT_EQ(clGetPlatformIDs(1, &platform, nullptr), CL_SUCCESS);
    ASSERT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, nullptr);
    write_file(src.path() / "inc" / "a.h", "#define A 1\n");
    write_file(src.path() / "inc" / "b.h", "#define B 2\n");
    sources = {
        {"uses_a1", "#include \"a.h\"\n__kernel void k1(__global int* x) { x[0] = A; }\n"},
        {"uses_a2", "#include <a.h>\n__kernel void k2(__global int* x) { x[0] = A + 1; }\n"},
        {"uses_b", "#include \"b.h\"\n__kernel void k3(__global int* x) { x[0] = B; }\n"},
    };
  }
  void TearDown() override { clReleaseContext(context); }

  Config config() {
    return Config::from_variables(
        {{"JITCACHE_DIR", cache.path().string()}, {"JITCACHE_OPENCL_STORE", "wait"}});
  }
  std::string options() { return "-I " + (src.path() / "inc").string(); }

  // Builds every source in a fresh Cache (a new process, as far as tiers go); outcome per source.
  std::map<std::string, Outcome> build_all(const std::string& opts) {
    Cache c(config());
    std::map<std::string, Outcome> out;
    for (const auto& [name, text] : sources) {
      auto p = opencl::build_program(c, context, device, text, opts);
      EXPECT_TRUE(p) << (p ? "" : p.error().message);
      if (p) {
        out[name] = p->info.outcome;
        clReleaseProgram(p->program);
      }
    }
    return out;
  }

  test::TempDir cache, src;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  std::map<std::string, std::string> sources;
};

TEST_F(ExactKeysTest, AHeaderChangeMissesExactlyItsIncludersAndARevertHitsAgain) {
  EXPECT_EQ(build_all(options()), (std::map<std::string, Outcome>{{"uses_a1", Outcome::miss},
                                                                  {"uses_a2", Outcome::miss},
                                                                  {"uses_b", Outcome::miss}}));
  write_file(src.path() / "inc" / "a.h", "#define A 5\n");
  EXPECT_EQ(build_all(options()),
            (std::map<std::string, Outcome>{
                {"uses_a1", Outcome::miss}, {"uses_a2", Outcome::miss}, {"uses_b", Outcome::hit}}));
  write_file(src.path() / "inc" / "a.h", "#define A 1\n");
  EXPECT_EQ(build_all(options()),
            (std::map<std::string, Outcome>{
                {"uses_a1", Outcome::hit}, {"uses_a2", Outcome::hit}, {"uses_b", Outcome::hit}}));
}

TEST_F(ExactKeysTest, AHeaderEditedDuringTheProcessIsSeenByTheSameCache) {
  Cache c(config());
  const std::string& text = sources["uses_a1"];
  auto first = opencl::build_program(c, context, device, text, options());
  ASSERT_TRUE(first);
  write_file(src.path() / "inc" / "a.h", "#define A 7\n");
  auto second = opencl::build_program(c, context, device, text, options());
  ASSERT_TRUE(second);
  EXPECT_EQ(second->info.outcome, Outcome::miss);
  EXPECT_NE(first->program, second->program);
  clReleaseProgram(first->program);
  clReleaseProgram(second->program);
}

TEST_F(ExactKeysTest, AHeaderShadowedEarlierInTheIncludePathIsAMiss) {
  write_file(src.path() / "early" / "placeholder", "");
  const std::string opts = "-I " + (src.path() / "early").string() + " " + options();
  build_all(opts);
  write_file(src.path() / "early" / "a.h", "#define A 9\n");
  auto outcomes = build_all(opts);
  EXPECT_EQ(outcomes["uses_a1"], Outcome::miss);
  EXPECT_EQ(outcomes["uses_b"], Outcome::hit);
}

TEST_F(ExactKeysTest, ACommentOnlyChangeIsAMiss) {
  build_all(options());
  write_file(src.path() / "inc" / "b.h", "// a comment\n#define B 2\n");
  EXPECT_EQ(build_all(options())["uses_b"], Outcome::miss);
}

TEST_F(ExactKeysTest, DefinesGiveSeparateEntriesAndIncludeDirsCountByContent) {
  const std::string& text = sources["uses_b"];
  auto n1 = opencl::make_key(config(), device, text, options() + " -DN=1");
  auto n2 = opencl::make_key(config(), device, text, options() + " -DN=2");
  ASSERT_TRUE(n1 && n2);
  EXPECT_NE(n1->digest, n2->digest);
  // The same headers reached through a differently spelled path: the same key.
  fs::create_directory_symlink(src.path() / "inc", src.path() / "alias");
  auto spelled = opencl::make_key(config(), device, text, "-I" + (src.path() / "alias").string());
  auto plain = opencl::make_key(config(), device, text, options());
  ASSERT_TRUE(spelled && plain);
  EXPECT_EQ(spelled->digest, plain->digest);
  // Options keep their order.
  auto ab = opencl::make_key(config(), device, text, "-DA -DB");
  auto ba = opencl::make_key(config(), device, text, "-DB -DA");
  EXPECT_NE(ab->digest, ba->digest);
}

TEST_F(ExactKeysTest, ADefineNamingAFileCountsByItsContent) {
  write_file(src.path() / "cfg" / "config.h", "#define C 1\n");
  const std::string text = "#include CONFIG\n__kernel void k(__global int* x) { x[0] = C; }\n";
  const std::string opts = "-I " + (src.path() / "cfg").string() + " -DCONFIG=\"" +
                           (src.path() / "cfg" / "config.h").string() + "\"";
  auto before = opencl::make_key(config(), device, text, opts);
  write_file(src.path() / "cfg" / "config.h", "#define C 2\n");
  auto after = opencl::make_key(config(), device, text, opts);
  ASSERT_TRUE(before && after);
  EXPECT_NE(before->digest, after->digest);
}

TEST_F(ExactKeysTest, ToolchainAndDeviceIdentityChangesAreMisses) {
  auto id = opencl::identity(device);
  ASSERT_TRUE(id);
  const Config c = config();
  const std::string& text = sources["uses_b"];
  const Digest base = opencl::key_for(*id, c, text, options()).digest;
  std::set<Digest> seen{base};
  for (auto* fields : {&id->device, &id->toolchain}) {
    for (auto& [name, value] : *fields) {
      opencl::Identity changed = *id;
      auto& target = fields == &id->device ? changed.device : changed.toolchain;
      for (auto& [n, v] : target)
        if (n == name)
          v += " (upgraded)";
      EXPECT_TRUE(seen.insert(opencl::key_for(changed, c, text, options()).digest).second) << name;
    }
  }
  // A variable that changes PoCL's code generation is part of the key too.
  const Config flags =
      Config::from_variables({{"JITCACHE_DIR", cache.path().string()},
                              {"POCL_EXTRA_BUILD_FLAGS", "-cl-fast-relaxed-math"}});
  EXPECT_NE(opencl::key_for(*id, flags, text, options()).digest, base);
}

TEST_F(ExactKeysTest, ExplainNamesTheFieldThatDiffers) {
  const fs::path file = src.path() / "k.cl";
  write_file(file, sources["uses_a1"]);
  const std::map<std::string, std::string> env{{"JITCACHE_DIR", cache.path().string()},
                                               {"JITCACHE_OPENCL_STORE", "wait"}};
  const auto explain = [&](const std::string& opts) {
    auto r = test::run_cli(
        {"explain", "--backend", "opencl", "--options", opts, "--json", file.string()}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto changed = [](const nlohmann::json& j) {
    std::set<std::string> names;
    for (const auto& d : j["differences"])
      for (const auto& f : d["fields"])
        names.insert(f["section"].get<std::string>() + ":" + f["name"].get<std::string>());
    return names;
  };
  ASSERT_EQ(
      test::run_cli(
          {"build", "--backend", "opencl", "--options", options() + " -DN=1", file.string()}, env)
          .exit_code,
      0);
  auto same = explain(options() + " -DN=1");
  EXPECT_EQ(same["stored"], true);
  bool header_with_path = false;
  for (const auto& f : same["fields"])
    header_with_path |= f["section"] == "header" && f["name"] == "a.h" &&
                        f["detail"].get<std::string>().find("inc/a.h") != std::string::npos;
  EXPECT_TRUE(header_with_path);

  EXPECT_EQ(changed(explain(options() + " -DN=2")), std::set<std::string>{"options:options"});
  write_file(src.path() / "inc" / "a.h", "#define A 3\n");
  auto header = explain(options() + " -DN=1");
  EXPECT_EQ(header["stored"], false);
  EXPECT_EQ(changed(header), std::set<std::string>{"header:a.h"});
}

} // namespace
} // namespace jitcache
