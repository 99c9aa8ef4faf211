// The OpenCL backend end to end on PoCL: real compiles, real binaries, real launches.
#include <jitcache/opencl.hpp>

#include "core/engine/cache_core.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "tests/support/files.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/stamp_clock.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

namespace jitcache {

using detail::LmdbStore;
namespace {
using test::k_options;
using test::read_file;

// A PoCL context on every device of the first platform.
class PoclContext {
public:
  PoclContext() {
    cl_platform_id platform = nullptr;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0)
      return;
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
    devices.resize(n);
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, devices.data(), nullptr);
    context = clCreateContext(nullptr, n, devices.data(), nullptr, nullptr, nullptr);
  }
  ~PoclContext() {
    if (context)
      clReleaseContext(context);
  }
  cl_context context = nullptr;
  std::vector<cl_device_id> devices;
};

// Runs saxpy (y = a*x + y) from `program` on `device` and returns y.
std::vector<float> run_saxpy(cl_context context, cl_device_id device, cl_program program,
                             const std::vector<float>& x, std::vector<float> y, float a) {
  cl_int rc = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &rc);
  EXPECT_EQ(rc, CL_SUCCESS);
  cl_kernel kernel = clCreateKernel(program, "saxpy", &rc);
  EXPECT_EQ(rc, CL_SUCCESS);
  const std::size_t bytes = x.size() * sizeof(float);
  cl_mem bx = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                             const_cast<float*>(x.data()), &rc);
  cl_mem by =
      clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, y.data(), &rc);
  const int n = static_cast<int>(x.size());
  clSetKernelArg(kernel, 0, sizeof bx, &bx);
  clSetKernelArg(kernel, 1, sizeof by, &by);
  clSetKernelArg(kernel, 2, sizeof a, &a);
  clSetKernelArg(kernel, 3, sizeof n, &n);
  const std::size_t global = x.size();
  EXPECT_EQ(
      clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
      CL_SUCCESS);
  EXPECT_EQ(clEnqueueReadBuffer(queue, by, CL_TRUE, 0, bytes, y.data(), 0, nullptr, nullptr),
            CL_SUCCESS);
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  clReleaseKernel(kernel);
  clReleaseCommandQueue(queue);
  return y;
}

void expect_saxpy_works(cl_context context, cl_device_id device, cl_program program) {
  std::vector<float> x(1000), y(1000);
  for (int i = 0; i < 1000; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  const auto out = run_saxpy(context, device, program, x, y, 2.0f);
  for (int i = 0; i < 1000; ++i)
    ASSERT_FLOAT_EQ(out[i], 2.0f * i + 1.0f) << "at " << i;
}

class OpenclTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_NE(pocl.context, nullptr) << "PoCL must be installed (pocl-opencl-icd)";
    device = pocl.devices[0];
  }
  Config config(std::map<std::string, std::string> extra = {}) {
    extra.emplace("JITCACHE_DIR", dir.path().string());
    extra.emplace("JITCACHE_OPENCL_STORE", "wait"); // the stores are there when flush() returns
    return Config::from_variables(extra);
  }
  std::uint64_t stored_entries() {
    auto store = LmdbStore::open(dir.path() / "v1", true);
    std::uint64_t n = 0;
    if (store) {
      auto listed = (*store)->for_each([&](const Store::Item& item) { n += item.valid; });
      EXPECT_TRUE(listed) << listed.error().message;
    }
    return n;
  }
  test::TempDir dir;
  PoclContext pocl;
  cl_device_id device = nullptr;
  const std::string source = read_file(std::filesystem::path(test::k_kernels) / "vector_ops.cl");
};

TEST_F(OpenclTest, MissThenHitInANewProcessAndTheHitComputesCorrectly) {
  const std::string file = std::string(JITCACHE_KERNELS) + "/vector_ops.cl";
  const std::map<std::string, std::string> env{{"JITCACHE_DIR", dir.path().string()},
                                               {"JITCACHE_OPENCL_STORE", "wait"}};
  auto first =
      test::run_cli({"build", "--backend", "opencl", "--options", k_options, "--json", file}, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto miss = nlohmann::json::parse(first.out);
  EXPECT_EQ(miss["outcome"], "miss");
  EXPECT_GT(miss["bytes"].get<std::uint64_t>(), 1000u);
  auto second =
      test::run_cli({"build", "--backend", "opencl", "--options", k_options, "--json", file}, env);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  auto hit = nlohmann::json::parse(second.out);
  EXPECT_EQ(hit["outcome"], "hit");
  EXPECT_EQ(hit["tier"], "user");
  EXPECT_EQ(hit["key"], miss["key"]);
  // The host's compile slots (JITCACHE_MAX_COMPILES) stay, one file for every compile to come.
  for (const auto& file : std::filesystem::directory_iterator(dir.path() / "v1" / "leases"))
    EXPECT_EQ(file.path().filename(), "compile-slots")
        << "the compiler removes its lease file, and a hit creates none";

  // This process never compiled it: the program comes from the stored binary.
  Cache cache(config());
  auto program = opencl::build_program(cache, pocl.context, device, source, k_options);
  ASSERT_TRUE(program) << program.error().message;
  EXPECT_EQ(program->info.outcome, Outcome::hit);
  EXPECT_EQ(program->info.tier, "user");
  EXPECT_EQ(program->info.key.hex(), hit["key"]);
  expect_saxpy_works(pocl.context, device, program->program);
  clReleaseProgram(program->program);
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::compiles), 0u);
}

TEST_F(OpenclTest, RepeatedRequestReturnsTheSameProgramFromMemory) {
  Cache cache(config());
  auto a = opencl::build_program(cache, pocl.context, device, source, k_options);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->info.outcome, Outcome::miss);
  auto b = opencl::build_program(cache, pocl.context, device, source, k_options);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->info.outcome, Outcome::hit);
  EXPECT_EQ(b->info.tier, "memory");
  EXPECT_EQ(a->program, b->program);
  EXPECT_EQ(a->info.key, b->info.key);
  expect_saxpy_works(pocl.context, device, b->program);
  clReleaseProgram(a->program);
  clReleaseProgram(b->program);
  cache.flush();
  EXPECT_EQ(stored_entries(), 1u);
}

TEST_F(OpenclTest, EightThreadsOneCompile) {
  Cache cache(config());
  std::vector<cl_program> programs(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto p = opencl::build_program(cache, pocl.context, device, source, k_options);
      programs[i] = p ? p->program : nullptr;
    });
  for (auto& t : threads)
    t.join();
  const Stats s = cache.session_stats();
  EXPECT_EQ(s.get("opencl", Counter::compiles), 1u);
  EXPECT_EQ(s.get("opencl", Counter::misses), 1u);
  EXPECT_EQ(s.hits("opencl"), 7u);
  for (cl_program p : programs) {
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p, programs[0]);
    clReleaseProgram(p);
  }
}

TEST_F(OpenclTest, CompileErrorCarriesTheBuildLogAndStoresNothing) {
  Cache cache(config());
  auto p = opencl::build_program(cache, pocl.context, device,
                                 "__kernel void broken(__global float* x) { x[0] = y; }", "");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::compile_failed);
  EXPECT_NE(p.error().message.find("clBuildProgram"), std::string::npos);
  EXPECT_NE(p.error().log.find("undeclared identifier 'y'"), std::string::npos) << p.error().log;
  cache.flush();
  EXPECT_EQ(stored_entries(), 0u);
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::compile_errors), 1u);
}

TEST_F(OpenclTest, EmptySourceAndNullHandlesAreClearErrors) {
  Cache cache(config());
  auto p = opencl::build_program(cache, pocl.context, device, "", "");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(p.error().message.find("empty source"), std::string::npos);
  auto q = opencl::build_program(cache, nullptr, device, source, "");
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().code, ErrorCode::invalid_argument);
}

// PoCL's clBuildProgram crashes the process on a -D or -I with nothing after it (it reads past
// its option list); such options are refused with a clear error and never reach the runtime.
TEST_F(OpenclTest, ATrailingDefineOrIncludeOptionIsAClearErrorNotACrash) {
  Cache cache(config());
  for (const char* options : {"-D", "-I", "-DA -D", "-w  -I ", "-I. -D\t", "-cl-mad-enable -D"}) {
    auto p = opencl::build_program(cache, pocl.context, device, source, options);
    ASSERT_FALSE(p) << options;
    EXPECT_EQ(p.error().code, ErrorCode::invalid_argument) << options;
    EXPECT_NE(p.error().message.find("end with -"), std::string::npos) << p.error().message;
  }
  // A -D or -I followed by its argument is a request like any other.
  auto ok = opencl::build_program(cache, pocl.context, device, source, "-D A " + k_options);
  ASSERT_TRUE(ok) << ok.error().message;
  clReleaseProgram(ok->program);
  const std::string file = std::string(JITCACHE_KERNELS) + "/vector_ops.cl";
  auto cli = test::run_cli({"build", "--backend", "opencl", "--options", "-w -I", file},
                           {{"JITCACHE_DIR", dir.path().string()}});
  EXPECT_EQ(cli.exit_code, 1) << cli.err;
  EXPECT_NE(cli.err.find("end with -I and nothing after it"), std::string::npos) << cli.err;
}

// Random option strings made of the tokens that crashed PoCL and of ordinary ones: every build
// either succeeds or is an error; none takes the process down.
TEST_F(OpenclTest, RandomOptionStringsNeverCrashTheProcess) {
  const char* tokens[] = {"-D",
                          "-I",
                          "-DA",
                          "-DB=2",
                          "-w",
                          "-I.",
                          "-cl-mad-enable",
                          "-Werror",
                          "-cl-fast-relaxed-math",
                          "-cl-opt-disable",
                          "-DX",
                          "x"};
  const char* separators[] = {" ", "  ", "\t"};
  const unsigned seed = 20261126;
  std::mt19937 random(seed);
  Cache cache(config({{"JITCACHE_DISABLE", "1"}}));
  const std::string tiny = "__kernel void k(__global int* a) { a[0] = 1; }";
  int built = 0, refused = 0, failed = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::string options;
    const int n = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < n; ++i)
      options += (i ? separators[random() % 3] : "") + std::string(tokens[random() % 12]);
    if (random() % 4 == 0)
      options += separators[random() % 3];
    auto p = opencl::build_program(cache, pocl.context, device, tiny, options);
    if (p) {
      ++built;
      clReleaseProgram(p->program);
    } else if (p.error().code == ErrorCode::invalid_argument) {
      ++refused;
    } else {
      ++failed;
    }
  }
  std::printf("seed %u: %d built, %d refused, %d failed in the runtime\n", seed, built, refused,
              failed);
  EXPECT_GT(built, 0);
  EXPECT_GT(refused, 0);
}

TEST_F(OpenclTest, ARejectedStoredBinaryIsEvictedRebuiltAndCounted) {
  auto key = opencl::make_key(config(), device, source, k_options);
  ASSERT_TRUE(key);
  {
    auto store = LmdbStore::open(dir.path() / "v1", false).value();
    Entry garbage{"opencl", "this is not a program binary", {}, 7};
    garbage.key_fields = key->stored_fields; // the right request, a bad binary
    ASSERT_TRUE(store->put(key->digest, garbage));
  }
  Cache cache(config());
  auto p = opencl::build_program(cache, pocl.context, device, source, k_options);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->info.outcome, Outcome::miss);
  EXPECT_NE(p->info.note.find("rejected"), std::string::npos);
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::rejected), 1u);
  expect_saxpy_works(pocl.context, device, p->program);
  clReleaseProgram(p->program);
  cache.flush();
  auto stored = LmdbStore::open(dir.path() / "v1", true).value()->get(key->digest).value();
  ASSERT_TRUE(stored);
  EXPECT_NE(stored->payload, "this is not a program binary");
}

TEST_F(OpenclTest, HeaderChangeChangesTheKey) {
  test::TempDir inc;
  std::ofstream(inc.path() / "k.h") << "#define K 1\n";
  const std::string src = "#include \"k.h\"\n__kernel void f(__global int* x) { x[0] = K; }\n";
  const std::string options = "-I " + inc.path().string();
  auto a = opencl::make_key(config(), device, src, options);
  std::ofstream(inc.path() / "k.h") << "#define K 2\n";
  auto b = opencl::make_key(config(), device, src, options);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->digest, b->digest);
  bool header_field = false;
  for (const auto& f : all_fields(*b))
    header_field |= f.section == KeySection::header && f.value == "#define K 2\n";
  EXPECT_TRUE(header_field);
}

// The request shortcut (a repeated identical request skips key building) must not outlive the
// headers it was built from: an edit, a header that now shadows it, and its removal, each made
// while the shortcut is in use, give the key of the files as they are.
TEST_F(OpenclTest, ARepeatedRequestSeesItsHeadersChangeDuringTheProcess) {
  test::TempDir inc;
  const auto write = [&](const std::string& name, const std::string& text) {
    std::filesystem::create_directories((inc.path() / name).parent_path());
    std::ofstream(inc.path() / name) << text;
  };
  write("second/k.h", "#define K 1\n");
  std::filesystem::create_directories(inc.path() / "first");
  const std::string src = "#include \"k.h\"\n__kernel void f(__global int* x) { x[0] = K; }\n";
  const std::string options =
      "-I " + (inc.path() / "first").string() + " -I " + (inc.path() / "second").string();
  // Files changed within 2 seconds cannot vouch for their content: no shortcut is taken then.
  // The clock that says so stands still, and is moved past the files instead of waiting.
  test::FakeStampClock clock;
  Cache cache(config());
  jitcache::detail::core_of(cache).set_stamp_clock(clock.clock());
  const auto& handles = jitcache::detail::core_of(cache).handles();
  const auto build = [&] {
    auto p = opencl::build_program(cache, pocl.context, device, src, options);
    EXPECT_TRUE(p) << p.error().message;
    if (p)
      clReleaseProgram(p->program);
    return p ? p->info : BuildInfo{};
  };
  // Builds once more from the shortcut, which the next change must then drop.
  const auto through_the_shortcut = [&](const Digest& key) {
    clock.settle();
    EXPECT_EQ(build().key, key) << "the key rebuilt from settled files, remembered";
    // Proven by stat until that has cost what watching their folders does, then watched.
    std::uint64_t stats = handles.stat_checks();
    for (int i = 0; i < 64; ++i) {
      const BuildInfo info = build();
      EXPECT_EQ(info.tier, "memory");
      EXPECT_EQ(info.key, key);
      if (handles.stat_checks() == stats)
        break;
      stats = handles.stat_checks();
    }
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(build().key, key);
    EXPECT_EQ(handles.stat_checks(), stats) << "the headers are watched, not stat'ed";
    clock.stop(); // the next change is too recent to vouch for itself
  };

  const Digest one = build().key;
  through_the_shortcut(one);
  write("second/k.h", "#define K 2\n"); // the same size
  const BuildInfo edited = build();
  EXPECT_EQ(edited.outcome, Outcome::miss);
  EXPECT_NE(edited.key, one);

  through_the_shortcut(edited.key);
  write("first/k.h", "#define K 3\n");
  const BuildInfo shadowed = build();
  EXPECT_EQ(shadowed.outcome, Outcome::miss);
  EXPECT_NE(shadowed.key, edited.key);
  EXPECT_NE(shadowed.key, one);

  through_the_shortcut(shadowed.key);
  std::filesystem::remove(inc.path() / "first/k.h");
  const BuildInfo removed = build();
  EXPECT_EQ(removed.tier, "memory") << "second/k.h again: the program built for it";
  EXPECT_EQ(removed.key, edited.key);
}

TEST_F(OpenclTest, PoclKernelCacheOffMeansNothingOnDisk) {
  Cache cache(config({{"POCL_KERNEL_CACHE", "0"}}));
  EXPECT_FALSE(cache.persistent("opencl"));
  auto a = opencl::build_program(cache, pocl.context, device, source, k_options);
  ASSERT_TRUE(a);
  auto b = opencl::build_program(cache, pocl.context, device, source, k_options);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->info.tier, "memory");
  clReleaseProgram(a->program);
  clReleaseProgram(b->program);
  cache.flush();
  EXPECT_EQ(stored_entries(), 0u);
}

TEST_F(OpenclTest, ReadOnlyCacheStillBuilds) {
  Cache cache(config({{"JITCACHE_READONLY", "1"}}));
  auto p = opencl::build_program(cache, pocl.context, device, source, k_options);
  ASSERT_TRUE(p) << p.error().message;
  expect_saxpy_works(pocl.context, device, p->program);
  clReleaseProgram(p->program);
  cache.flush();
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "v1" / "data.mdb"));
}

// Run in a child process with POCL_DEVICES="pthread pthread" (see MultiDeviceContext).
TEST_F(OpenclTest, DISABLED_TwoDeviceContextChild) {
  ASSERT_GE(pocl.devices.size(), 2u);
  Cache cache(config());
  auto a = opencl::build_program(cache, pocl.context, pocl.devices[0], source, k_options);
  auto b = opencl::build_program(cache, pocl.context, pocl.devices[1], source, k_options);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->program, b->program) << "each device gets a program built for it";
  expect_saxpy_works(pocl.context, pocl.devices[0], a->program);
  expect_saxpy_works(pocl.context, pocl.devices[1], b->program);
  clReleaseProgram(a->program);
  clReleaseProgram(b->program);
}

TEST(OpenclMultiDevice, ContextWithTwoDevices) {
  auto r = test::run_process({"/proc/self/exe", "--gtest_also_run_disabled_tests",
                              "--gtest_filter=OpenclTest.DISABLED_TwoDeviceContextChild"},
                             {{"POCL_DEVICES", "pthread pthread"}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos) << r.out;
}

} // namespace
} // namespace jitcache

#ifdef JITCACHE_HAVE_HIP
#include <jitcache/hip.hpp>

namespace jitcache {
namespace {

// Debian 12's comgr and PoCL's clang register the same LLVM options: loading both aborts a
// process. With PoCL loaded (this process built OpenCL programs above), HIP must say so.
TEST(OpenclWithHip, HipInAProcessHoldingPoclIsAClearErrorNotAnAbort) {
  cl_platform_id platform = nullptr;
  ASSERT_EQ(clGetPlatformIDs(1, &platform, nullptr), CL_SUCCESS);
  cl_device_id device = nullptr;
  ASSERT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, nullptr);
  test::TempDir dir;
  Cache cache(Config::from_variables({{"JITCACHE_DIR", dir.path().string()}}));
  auto cl = opencl::build_program(cache, context, device, "__kernel void k() {}", "");
  ASSERT_TRUE(cl) << cl.error().message;
  clReleaseProgram(cl->program);
  clReleaseContext(context);
  hip::Program program;
  program.source = "extern \"C\" __global__ void k() {}";
  auto code = hip::compile(cache, "gfx90a", program);
  ASSERT_FALSE(code);
  EXPECT_EQ(code.error().code, ErrorCode::runtime_missing);
  EXPECT_NE(code.error().message.find("separate processes"), std::string::npos)
      << code.error().message;
}

} // namespace
} // namespace jitcache
#endif
