// The CUDA backend on a real GPU: loads, hits across processes, launches checked against the CPU,
// refused binaries. Skipped where there is no driver or no GPU.
#include "core/engine/cache_core.hpp"
#include "tests/cuda/cuda_test_support.hpp"
#include "tests/support/file_times.hpp"
#include "tests/support/process.hpp"
#include "tests/support/stamp_clock.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wheel_record.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

namespace jitcache {
namespace {

using test::kernel_program;
using test::TempDir;
namespace fs = std::filesystem;

// Device 0's primary context, current, or the test is skipped. The context is declared before
// any Cache in the tests, so that the modules go before the context does.
class CudaGpu : public ::testing::Test {
protected:
  void SetUp() override {
    if (!m_gpu.driver)
      GTEST_SKIP() << "no CUDA driver or GPU";
  }

  Config config() const {
    return Config::from_variables({{"JITCACHE_DIR", m_dir.path().string()}});
  }

  // Copies `host` to a new device buffer; freed with the fixture.
  template <typename T> CUdeviceptr upload(const std::vector<T>& host) {
    CUdeviceptr ptr = 0;
    EXPECT_EQ(api().cuMemAlloc(&ptr, host.size() * sizeof(T)), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemcpyHtoD(ptr, host.data(), host.size() * sizeof(T)), CUDA_SUCCESS);
    m_buffers.push_back(ptr);
    return ptr;
  }
  template <typename T> std::vector<T> download(CUdeviceptr ptr, std::size_t n) {
    std::vector<T> host(n);
    EXPECT_EQ(api().cuMemcpyDtoH(host.data(), ptr, n * sizeof(T)), CUDA_SUCCESS);
    return host;
  }
  void launch(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned block_x, unsigned block_y,
              std::vector<void*> args) {
    ASSERT_EQ(api().cuLaunchKernel(f, grid_x, grid_y, 1, block_x, block_y, 1, 0, nullptr,
                                   args.data(), nullptr),
              CUDA_SUCCESS);
    ASSERT_EQ(api().cuCtxSynchronize(), CUDA_SUCCESS);
  }

  // Runs saxpy from `module` on 1000 elements and checks it against the CPU.
  void expect_saxpy_works(const cuda::Module& module) {
    auto f = module.function("saxpy");
    ASSERT_TRUE(f) << f.error().message;
    std::vector<float> x(1000), y(1000);
    for (int i = 0; i < 1000; ++i) {
      x[i] = static_cast<float>(i);
      y[i] = static_cast<float>(1000 - i);
    }
    CUdeviceptr dx = upload(x), dy = upload(y);
    float a = 2.5f;
    int n = 1000;
    launch(*f, 4, 1, 128, 1, {&a, &dx, &dy, &n});
    const auto out = download<float>(dy, 1000);
    for (int i = 0; i < 1000; ++i)
      ASSERT_FLOAT_EQ(out[i], a * x[i] + y[i]) << i;
  }

  // `fill`, which writes VALUE (from the headers `includes` pulls in, found in `include`) to 32
  // floats.
  static cuda::Program fill_program(const std::string& includes, const fs::path& include) {
    cuda::Program program;
    program.name = "fill.cu";
    program.source =
        includes + "extern \"C\" __global__ void fill(float* out) { out[threadIdx.x] = VALUE; }\n";
    program.options = {"-I" + include.string()};
    return program;
  }
  // Runs `fill` from `module` and checks that it wrote `expected`.
  void expect_fill_writes(const cuda::Module& module, float expected) {
    auto f = module.function("fill");
    ASSERT_TRUE(f) << f.error().message;
    CUdeviceptr out = upload(std::vector<float>(32, 0.0f));
    launch(*f, 1, 1, 32, 1, {&out});
    EXPECT_EQ(download<float>(out, 32), std::vector<float>(32, expected));
  }

  void TearDown() override {
    for (CUdeviceptr ptr : m_buffers)
      api().cuMemFree(ptr);
  }

  const cuda::DriverApi& api() const { return *m_gpu.driver; }

  // The current device's compute capability as a number (9.0: 90).
  int device_sm() const {
    int major = 0, minor = 0;
    CUdevice device = 0;
    EXPECT_EQ(api().cuCtxGetDevice(&device), CUDA_SUCCESS);
    api().cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    api().cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    return major * 10 + minor;
  }

  test::GpuContext m_gpu;
  TempDir m_dir;
  std::vector<CUdeviceptr> m_buffers;
};

TEST_F(CudaGpu, MissThenHitInANewProcessThenRunFromTheHit) {
  const std::map<std::string, std::string> env = {{"JITCACHE_DIR", m_dir.path().string()}};
  const std::string file = std::string(JITCACHE_KERNELS) + "/saxpy.cu";
  for (const char* outcome : {"miss", "hit"}) {
    auto run = test::run_cli({"build", "--backend", "cuda", "--json", file}, env);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto line = nlohmann::json::parse(run.out);
    EXPECT_EQ(line["outcome"], outcome) << run.out;
    EXPECT_EQ(line["tier"], std::string(outcome) == "miss" ? "compile" : "user") << run.out;
  }
  // The CLI named its program by the path as given: so does this one.
  cuda::Program program = kernel_program("saxpy.cu");
  Cache cache(config());
  auto module = cuda::load_module(cache, program);
  ASSERT_TRUE(module) << module.error().message;
  EXPECT_EQ(module->info.outcome, Outcome::hit);
  EXPECT_EQ(module->info.tier, "user");
  EXPECT_GT(module->info.load_ms, 0);
  expect_saxpy_works(*module);
  EXPECT_EQ(cache.session_stats().hits("cuda", "user"), 1u);
}

// A remembered key's module is loaded while its stamps are checked on another thread: it must
// be used, and counted, only when they held.
TEST_F(CudaGpu, AHeaderEditedBetweenProcessesIsNotServedByTheModuleLoadedEarly) {
  const fs::path include = m_dir.path() / "include";
  fs::create_directories(include);
  std::string source;
  for (int i = 0; i < 100; ++i) { // enough stamps for the check to run on a thread
    std::ofstream(include / ("h" + std::to_string(i) + ".h")) << "// header " << i << "\n";
    source += "#include \"h" + std::to_string(i) + ".h\"\n";
  }
  std::ofstream(include / "value.h") << "#define VALUE 2.5f\n";
  const cuda::Program program = fill_program(source + "#include \"value.h\"\n", include);
  test::FakeStampClock clock;
  clock.settle(); // the headers' stamps can vouch for them

  // One load in a Cache of its own, as a new process; what `fill` wrote, and the counters.
  const auto load = [&](Outcome outcome, float expected) {
    Cache cache(config());
    detail::core_of(cache).set_stamp_clock(clock.clock());
    auto module = cuda::load_module(cache, program);
    ASSERT_TRUE(module) << module.error().message << "\n" << module.error().log;
    EXPECT_EQ(module->info.outcome, outcome);
    const Stats stats = cache.session_stats();
    EXPECT_EQ(stats.hits("cuda", "user"), outcome == Outcome::hit ? 1u : 0u);
    EXPECT_EQ(stats.get("cuda", Counter::misses), outcome == Outcome::miss ? 1u : 0u);
    expect_fill_writes(*module, expected);
  };
  load(Outcome::miss, 2.5f);
  load(Outcome::hit, 2.5f);
  clock.stop();
  std::ofstream(include / "value.h") << "#define VALUE 3.5f\n"; // same size
  load(Outcome::miss, 3.5f);
}

// The manifest still names a key whose entry is gone (evicted): the key is proven, nothing is
// loaded early, and the usual path compiles it again.
TEST_F(CudaGpu, ARememberedKeyWhoseEntryWasEvictedIsCompiledAgain) {
  const cuda::Program program = kernel_program("saxpy.cu");
  Digest key;
  for (int i = 0; i < 2; ++i) { // a miss, then a hit that remembers the request's key
    Cache cache(config());
    auto module = cuda::load_module(cache, program);
    ASSERT_TRUE(module) << module.error().message;
    key = module->info.key;
  }
  {
    Cache cache(config());
    auto full = cuda::make_key(cache.config(), program);
    ASSERT_TRUE(full) << full.error().message;
    ASSERT_EQ(full->digest, key);
    cache.evict(*full);
  }
  Cache cache(config());
  auto module = cuda::load_module(cache, program);
  ASSERT_TRUE(module) << module.error().message;
  EXPECT_EQ(module->info.outcome, Outcome::miss);
  EXPECT_EQ(module->info.key, key);
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::compiles), 1u);
  expect_saxpy_works(*module);
}

TEST_F(CudaGpu, TheMemoryTierReturnsTheLoadedModule) {
  Cache cache(config());
  const cuda::Program program = kernel_program("saxpy.cu");
  auto first = cuda::load_module(cache, program);
  ASSERT_TRUE(first) << first.error().message << "\n" << first.error().log;
  EXPECT_EQ(first->info.outcome, Outcome::miss);
  auto second = cuda::load_module(cache, program);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->info.outcome, Outcome::hit);
  EXPECT_EQ(second->info.tier, "memory");
  EXPECT_EQ(second->module, first->module);
  EXPECT_EQ(second->info.key, first->info.key);
  expect_saxpy_works(*second);
}

TEST_F(CudaGpu, ATemplatedKernelRunsFromAHitThroughItsNameExpression) {
  const cuda::Program program = kernel_program("scale.cu", {"scale<float, 4>"});
  {
    Cache cache(config());
    auto module = cuda::load_module(cache, program);
    ASSERT_TRUE(module) << module.error().message << "\n" << module.error().log;
    EXPECT_EQ(module->info.outcome, Outcome::miss);
  }
  Cache cache(config());
  auto module = cuda::load_module(cache, program);
  ASSERT_TRUE(module) << module.error().message;
  EXPECT_EQ(module->info.outcome, Outcome::hit);
  auto f = module->function("scale<float, 4>");
  ASSERT_TRUE(f) << f.error().message;
  std::vector<float> x(1001);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i);
  CUdeviceptr dx = upload(x);
  float a = -0.5f;
  int n = static_cast<int>(x.size());
  launch(*f, 2, 1, 64, 1, {&dx, &a, &n});
  const auto out = download<float>(dx, x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    ASSERT_FLOAT_EQ(out[i], a * x[i]) << i;
  EXPECT_FALSE(module->function("scale<double, 2>")); // never instantiated
}

TEST_F(CudaGpu, ACubKernelRuns) {
  Cache cache(config());
  auto module = cuda::load_module(cache, kernel_program("block_reduce.cu"));
  ASSERT_TRUE(module) << module.error().message << "\n" << module.error().log;
  auto f = module->function("block_sum");
  ASSERT_TRUE(f) << f.error().message;
  constexpr int k_block = 256, k_blocks = 37;
  std::vector<float> in(k_block * k_blocks - 100);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i % 7);
  CUdeviceptr din = upload(in), dout = upload(std::vector<float>(k_blocks, -1.0f));
  int n = static_cast<int>(in.size());
  launch(*f, k_blocks, 1, k_block, 1, {&din, &dout, &n});
  const auto out = download<float>(dout, k_blocks);
  for (int b = 0; b < k_blocks; ++b) {
    float expected = 0;
    for (int i = b * k_block; i < std::min(n, (b + 1) * k_block); ++i)
      expected += in[i];
    ASSERT_FLOAT_EQ(out[b], expected) << b;
  }
}

TEST_F(CudaGpu, ACooperativeGroupsKernelRuns) {
  Cache cache(config());
  auto module = cuda::load_module(cache, kernel_program("transpose.cu"));
  ASSERT_TRUE(module) << module.error().message << "\n" << module.error().log;
  auto f = module->function("transpose");
  ASSERT_TRUE(f) << f.error().message;
  int rows = 70, cols = 45;
  std::vector<float> in(rows * cols);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i);
  CUdeviceptr din = upload(in), dout = upload(std::vector<float>(in.size(), 0));
  launch(*f, (cols + 31) / 32, (rows + 31) / 32, 32, 8, {&din, &dout, &rows, &cols});
  const auto out = download<float>(dout, in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      ASSERT_EQ(out[c * rows + r], in[r * cols + c]) << r << "," << c;
}

TEST_F(CudaGpu, ACorruptedStoredCubinIsRejectedRebuiltAndRuns) {
  const cuda::Program program = kernel_program("saxpy.cu");
  Digest key;
  {
    Cache cache(config());
    auto module = cuda::load_module(cache, program);
    ASSERT_TRUE(module) << module.error().message;
    key = module->info.key;
    cache.flush();
  }
  {
    Cache cache(config());
    for (const auto& tier : cache.tiers())
      if (tier->name() == "user") {
        auto stored = tier->get(key);
        ASSERT_TRUE(stored && *stored);
        Entry garbage = **stored;
        garbage.payload = std::string(4096, '\xab');
        ASSERT_TRUE(tier->put(key, garbage));
      }
  }
  Cache cache(config());
  auto module = cuda::load_module(cache, program);
  ASSERT_TRUE(module) << module.error().message;
  EXPECT_EQ(module->info.outcome, Outcome::miss);
  EXPECT_NE(module->info.note.find("rejected"), std::string::npos) << module->info.note;
  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.get("cuda", Counter::rejected), 1u);
  EXPECT_EQ(stats.get("cuda", Counter::compiles), 1u);
  expect_saxpy_works(*module);
  cache.flush();
  // The rebuilt binary replaced the refused one.
  Cache again(config());
  auto reloaded = cuda::load_module(again, program);
  ASSERT_TRUE(reloaded);
  EXPECT_EQ(reloaded->info.outcome, Outcome::hit);
  EXPECT_EQ(again.session_stats().get("cuda", Counter::rejected), 0u);
}

TEST_F(CudaGpu, AnOfflinePrecompileForTheDevicesArchIsAHit) {
  const std::string arch = "sm_" + std::to_string(device_sm());
  const cuda::Program program = kernel_program("saxpy.cu");
  {
    Cache cache(config());
    auto binary = cuda::compile(cache, arch, program);
    if (!binary && binary.error().code == ErrorCode::unsupported)
      GTEST_SKIP() << binary.error().message;
    ASSERT_TRUE(binary) << binary.error().message;
  }
  Cache cache(config());
  auto module = cuda::load_module(cache, program);
  ASSERT_TRUE(module) << module.error().message;
  EXPECT_EQ(module->info.outcome, Outcome::hit);
  expect_saxpy_works(*module);
}

// The package for sm_90 was made at build time by `jitcache build --arch sm_90` and `jitcache
// export` with no GPU visible (cmake/make_package.cmake hides them): on an sm_90 GPU it serves
// the load from the system tier, nothing is compiled or written to the user tier, and the kernel
// computes the right result.
TEST_F(CudaGpu, APackageMadeWithoutAGpuServesThisGpuWithZeroCompiles) {
  if (const int sm = device_sm(); sm != 90)
    GTEST_SKIP() << "the package serves sm_90; this GPU is sm_" << sm;
  Cache cache(Config::from_variables(
      {{"JITCACHE_DIR", m_dir.path().string()}, {"JITCACHE_SYSTEM_PATH", JITCACHE_SM90_PACKAGE}}));
  auto module = cuda::load_module(cache, kernel_program("saxpy.cu"));
  ASSERT_TRUE(module) << module.error().message;
  EXPECT_EQ(module->info.outcome, Outcome::hit);
  EXPECT_EQ(module->info.tier, "system");
  expect_saxpy_works(*module);
  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.hits("cuda", "system"), 1u);
  EXPECT_EQ(stats.get("cuda", Counter::compiles), 0u);
  EXPECT_EQ(test::user_entries(cache), 0u);
}

// A package made on one machine, with the portable manifest of a kernel that includes headers a
// package manager installed (a wheel's, with its RECORD), serves a new machine (a user tier that
// never saw the request) from the system tier, and the kernel runs; a header changed on the new
// machine, with its size and modification time kept or with a new time, is never served.
TEST_F(CudaGpu, APackagesManifestServesANewMachineAndNeverAChangedHeader) {
  const fs::path site = m_dir.path() / "site", include = site / "tk" / "include";
  std::string source, record;
  for (int i = 0; i < 100; ++i) { // enough files for the proof to run beside the load
    const std::string name = "h" + std::to_string(i) + ".h",
                      text = "// header " + std::to_string(i) + "\n";
    test::write_file(include / name, text);
    record += test::record_line("tk/include/" + name, text);
    source += "#include <" + name + ">\n";
  }
  const std::string value = "#define VALUE 2.5f\n";
  test::write_file(include / "value.h", value);
  record += test::record_line("tk/include/value.h", value);
  test::write_file(site / "tk-1.0.dist-info" / "RECORD", record);
  const cuda::Program program = fill_program(source + "#include <value.h>\n", include);
  test::FakeStampClock clock;
  clock.settle();

  // One load with user tier `dir` (and the package when `packaged`), as a new process.
  const fs::path packages = m_dir.path() / "packages";
  const auto load = [&](const fs::path& dir, bool packaged, Outcome outcome, float expected) {
    std::map<std::string, std::string> env{{"JITCACHE_DIR", dir.string()}};
    if (packaged)
      env["JITCACHE_SYSTEM_PATH"] = packages.string();
    Cache cache(Config::from_variables(env));
    detail::core_of(cache).set_stamp_clock(clock.clock());
    auto module = cuda::load_module(cache, program);
    ASSERT_TRUE(module) << module.error().message << "\n" << module.error().log;
    EXPECT_EQ(module->info.outcome, outcome);
    if (outcome == Outcome::hit) {
      EXPECT_EQ(module->info.tier, "system");
    }
    expect_fill_writes(*module, expected);
  };
  load(m_dir.path() / "made", false, Outcome::miss, 2.5f);
  fs::create_directories(packages);
  auto exported =
      test::run_cli({"export", "--backend", "cuda", "--arch", "sm_" + std::to_string(device_sm()),
                     "--json", "-o", (packages / "fill.jcpkg").string()},
                    {{"JITCACHE_DIR", (m_dir.path() / "made").string()}});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const auto summary = nlohmann::json::parse(exported.out);
  EXPECT_EQ(summary["manifests"], 1) << exported.out;
  EXPECT_EQ(summary["headers_vouched"], 101) << exported.out;

  load(m_dir.path() / "new1", true, Outcome::hit, 2.5f);
  test::until_ctime_passes(site / "tk-1.0.dist-info" / "RECORD", m_dir.path() / "scratch");
  test::rewrite_keeping_mtime(include / "value.h", "#define VALUE 3.5f\n"); // same size
  load(m_dir.path() / "new2", true, Outcome::miss, 3.5f);
  test::write_file(include / "value.h", "#define VALUE 4.5f\n"); // a new time
  load(m_dir.path() / "new3", true, Outcome::miss, 4.5f);
}

TEST_F(CudaGpu, ConcurrentLoadsCompileAndLoadOnce) {
  Cache cache(config());
  const cuda::Program program = kernel_program("scale.cu", {"scale<float, 4>"});
  CUcontext context = nullptr;
  api().cuCtxGetCurrent(&context);
  std::vector<std::thread> threads;
  std::vector<CUmodule> modules(8);
  std::atomic<int> failures{0};
  for (std::size_t i = 0; i < modules.size(); ++i)
    threads.emplace_back([&, i] {
      api().cuCtxSetCurrent(context);
      auto module = cuda::load_module(cache, program);
      failures += !module;
      if (module)
        modules[i] = module->module;
    });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(failures, 0);
  for (CUmodule m : modules)
    EXPECT_EQ(m, modules[0]);
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::compiles), 1u);
}

} // namespace
} // namespace jitcache
