// The cohort over MPI (jitcache/mpi.hpp): run under mpirun, every rank runs every test, each a
// collective over a communicator of its own. Real PoCL, real Open MPI; several "nodes" are
// user tiers of their own (what ranks of one host share is their user tier).
#include <jitcache/mpi.hpp>
#include <jitcache/opencl.hpp>
#ifdef JITCACHE_HAVE_CUDA
#include <jitcache/cuda.hpp>
#endif
#ifdef JITCACHE_HAVE_HIP
#include <jitcache/hip.hpp>
#endif

#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using jitcache::Cache;
using jitcache::Config;
using jitcache::Counter;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

std::uint64_t sum(std::uint64_t mine) {
  std::uint64_t total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

std::uint64_t most(std::uint64_t mine) {
  std::uint64_t top = 0;
  MPI_Allreduce(&mine, &top, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return top;
}

// A folder every rank sees, made by rank 0, removed when the test ends.
class SharedDir {
public:
  SharedDir() {
    char path[4096] = {};
    if (world_rank() == 0) {
      std::string made = (fs::temp_directory_path() / "jitcache-mpi-XXXXXX").string();
      made.copy(path, made.size());
      if (!mkdtemp(path))
        std::abort();
    }
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    m_path = path;
  }
  ~SharedDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
      std::error_code ec;
      fs::remove_all(m_path, ec);
    }
  }
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

// A fresh duplicate of the world for each test: a test that leaves a collective unmatched (a
// rank that never joins) leaves it there, not in the next test.
class TestComm {
public:
  TestComm() { MPI_Comm_dup(MPI_COMM_WORLD, &m_comm); }
  MPI_Comm get() const { return m_comm; }

private:
  MPI_Comm m_comm = MPI_COMM_NULL; ///< not freed: what an abandoned call left may still use it
};

Config config_at(const fs::path& dir, const std::string& system_path = ":") {
  return Config::from_variables({{"JITCACHE_DIR", dir.string()},
                                 {"JITCACHE_SYSTEM_PATH", system_path},
                                 {"JITCACHE_OPENCL_STORE", "wait"}});
}

// Kernel `n`: x[i] = x[i] * 3 + n, so that each kernel's result tells it apart.
std::string kernel(int n) {
  return "__kernel void k(__global int* x) { size_t i = get_global_id(0); x[i] = x[i] * 3 + " +
         std::to_string(n) + "; }\n";
}

struct Device {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
};

const Device& pocl() {
  static const Device device = [] {
    Device d;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &d.platform, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(d.platform, CL_DEVICE_TYPE_ALL, 1, &d.device, nullptr) != CL_SUCCESS)
      std::abort(); // PoCL must be installed
    cl_int rc = CL_SUCCESS;
    d.context = clCreateContext(nullptr, 1, &d.device, nullptr, nullptr, &rc);
    d.queue = clCreateCommandQueue(d.context, d.device, 0, &rc);
    return d;
  }();
  return device;
}

// Runs kernel `n`'s program on PoCL and checks what it computed.
void expect_runs(cl_program program, int n) {
  const Device& d = pocl();
  cl_int rc = CL_SUCCESS;
  cl_kernel k = clCreateKernel(program, "k", &rc);
  ASSERT_EQ(rc, CL_SUCCESS);
  std::vector<cl_int> x(16);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<cl_int>(i);
  cl_mem buffer = clCreateBuffer(d.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 x.size() * sizeof(cl_int), x.data(), &rc);
  ASSERT_EQ(rc, CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(k, 0, sizeof buffer, &buffer), CL_SUCCESS);
  const std::size_t global = x.size();
  ASSERT_EQ(clEnqueueNDRangeKernel(d.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
            CL_SUCCESS);
  ASSERT_EQ(clEnqueueReadBuffer(d.queue, buffer, CL_TRUE, 0, x.size() * sizeof(cl_int), x.data(), 0,
                                nullptr, nullptr),
            CL_SUCCESS);
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(x[i], static_cast<cl_int>(i) * 3 + n) << "kernel " << n;
  clReleaseMemObject(buffer);
  clReleaseKernel(k);
}

// The kernels rank `rank` asks for: overlapping sets, 5 distinct kernels across 3 ranks or more
// (PoCL takes a second or more for each on a loaded 2-core machine).
std::vector<int> wanted(int rank) {
  return {rank % 3, 3 + rank % 2};
}

std::vector<jitcache::opencl::Request> requests(const std::vector<int>& kernels) {
  std::vector<jitcache::opencl::Request> out;
  for (int n : kernels)
    out.push_back({pocl().context, pocl().device, kernel(n), ""});
  return out;
}

struct Round {
  jitcache::cohort::Report report;
  std::uint64_t compiles = 0;
};

// One call of the cohort with `kernels`, each program checked by running it.
Round build(const Config& config, MPI_Comm comm, const std::vector<int>& kernels,
            const jitcache::cohort::Options& options = {}) {
  Cache cache(config);
  jitcache::mpi::Exchange exchange(comm);
  Round round;
  auto programs =
      jitcache::opencl::build_programs(cache, exchange, requests(kernels), options, &round.report);
  EXPECT_EQ(programs.size(), kernels.size());
  for (std::size_t i = 0; i < programs.size(); ++i) {
    if (!programs[i]) {
      ADD_FAILURE() << "rank " << world_rank() << " kernel " << kernels[i] << ": "
                    << programs[i].error().message;
      continue;
    }
    expect_runs(programs[i]->program, kernels[i]);
    clReleaseProgram(programs[i]->program);
  }
  cache.flush();
  round.compiles = cache.session_stats().get("opencl", Counter::compiles);
  return round;
}

std::uint64_t distinct_kernels() {
  std::vector<bool> seen(16, false);
  std::uint64_t count = 0;
  for (int rank = 0; rank < world_size(); ++rank)
    for (int n : wanted(rank))
      if (!seen[n]) {
        seen[n] = true;
        ++count;
      }
  return count;
}

TEST(MpiCohort, ColdCompilesEachKernelOnceForTheJobSpreadThenWarmCompilesNone) {
  const SharedDir dir;
  const TestComm comm;
  // As many compile slots as ranks: the spread asked for below is the plan's, not the cap's
  // (with the host's cores as slots, which ranks compile depends on the order of the keys).
  Config config = config_at(dir.path() / "user");
  config = Config::from_variables([&] {
    auto variables = config.variables;
    variables["JITCACHE_MAX_COMPILES"] = std::to_string(world_size());
    return variables;
  }());
  const Round cold = build(config, comm.get(), wanted(world_rank()));
  EXPECT_TRUE(cold.report.agreed);
  EXPECT_EQ(cold.report.distinct, distinct_kernels());
  EXPECT_EQ(sum(cold.compiles), distinct_kernels());
  EXPECT_EQ(sum(cold.report.compiled), distinct_kernels());
  EXPECT_EQ(sum(cold.report.alone), 0u);
  // Spread: as even as the ranks that asked for each kernel allow, not all on one rank.
  const std::uint64_t share = (distinct_kernels() + world_size() - 1) / world_size();
  EXPECT_LE(most(cold.report.compiled), share + 1);
  EXPECT_GE(sum(cold.report.compiled > 0 ? 1 : 0),
            std::min<std::uint64_t>(distinct_kernels(), world_size()) - 1);

  const TestComm again;
  const Round warm = build(config, again.get(), wanted(world_rank()));
  EXPECT_EQ(sum(warm.compiles), 0u);
  EXPECT_EQ(sum(warm.report.received), 0u); // every rank's user tier has its own
}

TEST(MpiCohort, NodesEachFillTheirUserTierOnceFromOneCompilePerKernel) {
  const SharedDir dir;
  const TestComm comm;
  // Two "nodes": even and odd ranks, a user tier each, nothing shared between them.
  const Config config = config_at(dir.path() / ("node" + std::to_string(world_rank() % 2)));
  const Round cold = build(config, comm.get(), wanted(world_rank()));
  EXPECT_EQ(sum(cold.compiles), distinct_kernels());
  EXPECT_GT(sum(cold.report.received), 0u);

  // Each node's user tier now has every kernel its ranks asked for: nothing sent, none compiled.
  const TestComm again;
  const Round warm = build(config, again.get(), wanted(world_rank()));
  EXPECT_EQ(sum(warm.compiles), 0u);
  EXPECT_EQ(sum(warm.report.received), 0u);
}

TEST(MpiCohort, HitsOnSomeRanksAreSharedAndOnlyWhatNoRankHoldsIsCompiled) {
  const SharedDir dir;
  // Even ranks have a warm user tier with kernels 0..2; odd ranks have empty ones of their own.
  const bool warm = world_rank() % 2 == 0;
  const fs::path mine =
      warm ? dir.path() / "warm" : dir.path() / ("cold" + std::to_string(world_rank()));
  {
    const TestComm first;
    const Config warm_config = config_at(dir.path() / "warm");
    build(warm_config, first.get(), warm ? std::vector<int>{0, 1, 2} : std::vector<int>{});
  }
  const TestComm comm;
  // Odd ranks also ask for kernel 9, which no rank holds.
  std::vector<int> kernels = wanted(world_rank());
  if (!warm)
    kernels.push_back(9);
  const Round mixed = build(config_at(mine), comm.get(), kernels);
  EXPECT_EQ(sum(mixed.compiles), distinct_kernels() - 3 + (world_size() > 1 ? 1 : 0));
  EXPECT_GT(sum(mixed.report.shared), 0u);
}

TEST(MpiCohort, APackageOnOneRankIsSharedInsteadOfCompiled) {
  const SharedDir dir;
  const fs::path package = dir.path() / "kernels.jcpkg";
  {
    const TestComm first;
    build(config_at(dir.path() / "made"), first.get(), {0, 1, 2, 3, 4});
  }
  if (world_rank() == 0) {
    const std::string command = std::string("JITCACHE_DIR=") + (dir.path() / "made").string() +
                                " " JITCACHE_CLI " export --backend opencl -o " + package.string() +
                                " > /dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // Only rank 1 has the package; every rank an empty user tier of its own.
  const TestComm comm;
  const fs::path own = dir.path() / ("own" + std::to_string(world_rank()));
  const Config config = world_rank() == 1 ? config_at(own, package.string()) : config_at(own);
  std::vector<int> kernels = wanted(world_rank());
  if (world_rank() == 1)
    kernels = {0, 1, 2, 3, 4};
  const Round round = build(config, comm.get(), kernels);
  EXPECT_EQ(sum(round.compiles), 0u);
  if (world_rank() == 1) {
    EXPECT_EQ(round.report.shared, 5u);
  }
}

TEST(MpiCohort, ARankThatStallsWhileCompilingForOthersIsCompiledAroundInBoundedTime) {
  const SharedDir dir;
  const TestComm comm;
  jitcache::cohort::Options options;
  options.timeout = std::chrono::milliseconds(1000);
  // Rank 1 stalls in each compile it does for the others, well past their timeout.
  if (world_rank() == 1)
    options.before_compile = [](const std::string&) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
    };
  const Config config = config_at(dir.path() / ("node" + std::to_string(world_rank() % 2)));
  const Round round = build(config, comm.get(), wanted(world_rank()), options);
  // Every rank got correct programs (build() ran each); the ranks owed rank 1's compile made it
  // themselves.
  EXPECT_GT(sum(world_rank() == 1 ? 0 : round.report.alone), 0u);
  EXPECT_GE(sum(round.compiles), distinct_kernels());
}

TEST(MpiCohort, ARankThatNeverJoinsDelaysTheOthersByTheTimeoutOnly) {
  const SharedDir dir;
  const TestComm comm;
  const int absent = world_size() - 1;
  jitcache::cohort::Options options;
  options.timeout = std::chrono::milliseconds(1000);
  const Config config = config_at(dir.path() / "user");
  if (world_rank() != absent) {
    const Round round = build(config, comm.get(), wanted(world_rank()), options);
    EXPECT_FALSE(round.report.agreed);
    EXPECT_EQ(round.report.alone, wanted(world_rank()).size());
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiCohort, ACompileErrorIsEveryAskingRanksAnswerCompiledOnce) {
  const SharedDir dir;
  const TestComm comm;
  Cache cache(config_at(dir.path() / "user"));
  jitcache::mpi::Exchange exchange(comm.get());
  std::vector<jitcache::opencl::Request> set = requests({world_rank() % 3});
  set.push_back({pocl().context, pocl().device, "__kernel void broken( {", ""});
  auto programs = jitcache::opencl::build_programs(cache, exchange, set);
  ASSERT_EQ(programs.size(), 2u);
  ASSERT_TRUE(programs[0]);
  clReleaseProgram(programs[0]->program);
  ASSERT_FALSE(programs[1]);
  EXPECT_EQ(programs[1].error().code, jitcache::ErrorCode::compile_failed);
  EXPECT_EQ(sum(cache.session_stats().get("opencl", Counter::compile_errors)), 1u);
}

// Offline compiles for two targets each (no GPU): kernel `n` is `extern "C" k<n>`; every rank
// asks for kernels {rank % 2, 2} for both targets, 6 distinct (kernel, target) pairs.
template <typename Program> Program offline_program(int n) {
  Program program;
  program.source = "extern \"C\" __global__ void k" + std::to_string(n) +
                   "(float* x) { x[threadIdx.x] = x[threadIdx.x] * 3.0f + " + std::to_string(n) +
                   ".0f; }\n";
  return program;
}

template <typename Offline>
std::vector<Offline> offline_set(const std::vector<std::string>& targets) {
  std::vector<Offline> set;
  for (int n : {world_rank() % 2, 2})
    for (const std::string& target : targets)
      set.push_back({target, offline_program<decltype(Offline::program)>(n)});
  return set;
}

#ifdef JITCACHE_HAVE_CUDA
// The SM number a cubin's ELF header names (CUDA 13: bits 8..15 of e_flags, older: 0..7).
int cubin_sm(const std::string& cubin) {
  if (cubin.size() < 64 || cubin.compare(0, 4, "\177ELF") != 0)
    return -1;
  std::uint32_t flags = 0;
  std::memcpy(&flags, cubin.data() + 48, sizeof flags);
  return static_cast<int>(static_cast<unsigned char>(cubin[8]) >= 8 ? (flags >> 8) & 0xff
                                                                    : flags & 0xff);
}

TEST(MpiCohort, CudaOfflineCompilesEachKernelAndArchOnceForTheJob) {
  const SharedDir dir;
  const TestComm comm;
  Cache cache(config_at(dir.path() / ("node" + std::to_string(world_rank() % 2))));
  jitcache::mpi::Exchange exchange(comm.get());
  const auto set = offline_set<jitcache::cuda::Offline>({"sm_80", "sm_90"});
  jitcache::cohort::Report report;
  auto binaries = jitcache::cuda::compile_together(cache, exchange, set, {}, &report);
  ASSERT_EQ(binaries.size(), set.size());
  for (std::size_t i = 0; i < set.size(); ++i) {
    ASSERT_TRUE(binaries[i]) << binaries[i].error().message;
    EXPECT_EQ(binaries[i]->target, set[i].target);
    EXPECT_EQ("sm_" + std::to_string(cubin_sm(binaries[i]->cubin)), set[i].target);
    const std::string& source = set[i].program.source;
    const std::string name = source.substr(source.find("void ") + 5, 2); // "k<n>"
    EXPECT_NE(binaries[i]->cubin.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(sum(cache.session_stats().get("cuda", Counter::compiles)), world_size() > 1 ? 6u : 4u);
  EXPECT_EQ(sum(report.alone), 0u);
}
#endif

#ifdef JITCACHE_HAVE_HIP
TEST(MpiCohort, HipOfflineCompilesEachKernelAndTargetOnceForTheJob) {
  const SharedDir dir;
  const TestComm comm;
  Cache cache(config_at(dir.path() / ("node" + std::to_string(world_rank() % 2))));
  jitcache::mpi::Exchange exchange(comm.get());
  const auto set = offline_set<jitcache::hip::Offline>({"gfx90a", "gfx1030"});
  jitcache::cohort::Report report;
  auto objects = jitcache::hip::compile_together(cache, exchange, set, {}, &report);
  ASSERT_EQ(objects.size(), set.size());
  for (std::size_t i = 0; i < set.size(); ++i) {
    ASSERT_TRUE(objects[i]) << objects[i].error().message;
    EXPECT_EQ(objects[i]->code.compare(0, 4, "\177ELF"), 0);
    EXPECT_EQ(objects[i]->target.rfind(set[i].target, 0), 0u) << objects[i]->target;
    const std::string& source = set[i].program.source;
    const std::string name = source.substr(source.find("void ") + 5, 2); // "k<n>"
    EXPECT_NE(objects[i]->code.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(sum(cache.session_stats().get("hip", Counter::compiles)), world_size() > 1 ? 6u : 4u);
  EXPECT_EQ(sum(report.alone), 0u);
}
#endif

} // namespace

// Two jobs in a row on one user tier (ctest mpi.killed_rank, run by tests/mpi/killed_rank.sh,
// which names their folder in JITCACHE_MPI_JOB_DIR). In the first, rank 1 or 3 is killed
// (SIGKILL) in the compile it does for the other, holding the user tier's lease and a compile slot:
// Open MPI 4 lets no rank go on after another died (no ULFM), so the job ends, and the script
// checks it ends rather than hangs. The second job, on the same user tier, must find it healthy:
// every program right, every kernel compiled by the cohort (none waited out on the dead rank's
// lease).
fs::path job_dir() {
  const char* dir = std::getenv("JITCACHE_MPI_JOB_DIR");
  return dir ? fs::path(dir) : fs::path();
}

TEST(MpiCohortKilled, FirstJobARankIsKilledWhileCompilingForTheOthers) {
  if (job_dir().empty())
    GTEST_SKIP() << "run by tests/mpi/killed_rank.sh";
  const TestComm comm;
  jitcache::cohort::Options options;
  options.timeout = std::chrono::seconds(5);
  const Config config = config_at(job_dir() / "user");
  // Kernel 4 is asked by ranks 1 and 3 alone, so one of them compiles it for the other: that
  // one is killed there. Which of the two the plan picks depends on the order of the keys, that
  // is on the device and toolchain in them (a test that killed rank 1 at whatever it compiled
  // found it compiling only its own kernel on some machines, and no rank waited for it).
  const auto owed = jitcache::opencl::make_key(config, pocl().device, kernel(4), "");
  ASSERT_TRUE(owed) << owed.error().message;
  options.before_compile = [hex = owed->digest.hex()](const std::string& key) {
    if (key == hex)
      ::raise(SIGKILL);
  };
  std::vector<int> kernels = wanted(world_rank());
  if (world_rank() == 1) // also asked by rank 3: the dead rank is owed it by another, or owes it
    kernels.push_back(0);
  // Under mpirun --enable-recovery the others carry on: build() checks each program they end
  // with by running it; what the dead rank owed is compiled by its asker once the timeout passed.
  build(config, comm.get(), kernels, options);
}

TEST(MpiCohortKilled, SecondJobFindsTheUserTierHealthy) {
  if (job_dir().empty())
    GTEST_SKIP() << "run by tests/mpi/killed_rank.sh";
  const TestComm comm;
  jitcache::cohort::Options options;
  options.timeout = std::chrono::seconds(60);
  const Round round =
      build(config_at(job_dir() / "user"), comm.get(), wanted(world_rank()), options);
  EXPECT_TRUE(round.report.agreed);
  EXPECT_EQ(sum(round.report.alone), 0u);
  EXPECT_LE(sum(round.compiles), distinct_kernels());
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // A home of each rank's own: PoCL keeps its kernel cache there, and a rank must not find
  // another's compile in it. (Under TMPDIR: a killed job's homes are left in the script's.)
  std::string home = (fs::temp_directory_path() / "jitcache-mpi-home-XXXXXX").string();
  if (!mkdtemp(home.data()))
    return 2;
  ::setenv("HOME", home.c_str(), 1);
  ::setenv("XDG_CACHE_HOME", (home + "/.cache").c_str(), 1);
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  std::error_code ec;
  fs::remove_all(home, ec);
  MPI_Finalize();
  return failed;
}
