// One cold or warm start of an MPI job that builds the sample kernels on every rank, in one of the
// ways a job can share (or not) its compiles: the OpenCL kernels on PoCL (--backend opencl, the
// default), or the CUDA kernels compiled offline by NVRTC for an architecture (--backend cuda
// --arch sm_90: no GPU needed). Run by bench/mpi/run.py under mpirun, which starts the job once
// per mode, start and repetition and prints medians.
//
// usage: bench_mpi MODE ROOT KERNELS_DIR [--backend opencl|cuda] [--arch sm_XY] [--kernel FILE]
//   MODE: none     no cache: clBuildProgram from source on every rank (cuda: compile with no
//                  persistent tier, JITCACHE_DISABLE=cuda: NVRTC on every rank)
//         shared   one user tier for the job (ROOT/user), build_program (cuda: compile) per
//                  kernel (leases)
//         per_rank a user tier per rank (ROOT/rank<N>), build_program (cuda: compile) per
//                  kernel: the workaround users adopt
//         redis    a user tier per rank and the Redis remote tier (JITCACHE_REMOTE, set by
//                  run.py), build_program (cuda: compile) per kernel (the fleet's compile lease)
//         cohort   a user tier per rank (no shared filesystem), build_programs (cuda:
//                  compile_together) over MPI
//         single   as none, for the kernel FILE alone (--kernel; run with one rank): the time of
//                  one compile, against which the cohort's cold wall is judged
// Rank 0 prints one JSON line: the job's wall time (the slowest rank's, from a barrier), the
// CPU time of all ranks (user + system, children included), the compiles of all ranks (cuda:
// NVRTC compiles).
#include <jitcache/mpi.hpp>
#ifdef JITCACHE_BENCH_OPENCL
#include <jitcache/opencl.hpp>
#endif
#ifdef JITCACHE_BENCH_CUDA
#include <jitcache/cuda.hpp>
#endif

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage usage{};
    getrusage(who, &usage);
    total += usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
             usage.ru_stime.tv_usec / 1e6;
  }
  return total;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Args {
  std::string mode, root, kernels;
  std::string backend = "opencl";
  std::string arch;   // cuda: the target, "sm_90"
  std::string kernel; // single: the one kernel file
};

// A sample kernel: its file in KERNELS_DIR and, for a template, the instances to compile.
struct Kernel {
  const char* file;
  std::vector<std::string> name_expressions;
};

// The kernels of `all` the mode builds (single: the one --kernel names; none when it names none).
std::vector<Kernel> chosen(const std::vector<Kernel>& all, const Args& args) {
  if (args.mode != "single")
    return all;
  std::vector<Kernel> one;
  for (const Kernel& kernel : all)
    if (args.kernel == kernel.file)
      one.push_back(kernel);
  return one;
}

// What a rank does between the barrier and the end: adds its compiles, returns its failures.
using Work = std::function<int(std::uint64_t& compiles)>;

#ifdef JITCACHE_BENCH_OPENCL
Work opencl_work(const Args& args, const jitcache::Config& config, std::size_t& count) {
  const std::vector<Kernel> all = {{"matmul.cl", {}},
                                   {"nbody.cl", {}},
                                   {"reduce.cl", {}},
                                   {"stencil.cl", {}},
                                   {"vector_ops.cl", {}}};
  const std::vector<Kernel> kernels = chosen(all, args);
  std::vector<std::string> sources;
  for (const Kernel& kernel : kernels)
    sources.push_back(read(args.kernels + "/" + kernel.file));
  count = sources.size();

  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  clGetPlatformIDs(1, &platform, nullptr);
  clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
  cl_int rc = CL_SUCCESS;
  // Released when the work is (before MPI_Finalize).
  const auto release = [](cl_context c) {
    if (c)
      clReleaseContext(c);
  };
  std::shared_ptr<_cl_context> context(clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc),
                                       release);
  const std::string options = "-I " + args.kernels;
  const std::string mode = args.mode;
  return [=](std::uint64_t& compiles) {
    int failures = 0;
    cl_int status = CL_SUCCESS;
    if (mode == "none" || mode == "single") {
      for (const std::string& source : sources) {
        const char* text = source.c_str();
        cl_program program = clCreateProgramWithSource(context.get(), 1, &text, nullptr, &status);
        failures +=
            clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr) != CL_SUCCESS;
        clReleaseProgram(program);
        ++compiles;
      }
      return failures;
    }
    jitcache::Cache cache(config);
    if (mode == "cohort") {
      jitcache::mpi::Exchange exchange(MPI_COMM_WORLD);
      std::vector<jitcache::opencl::Request> set;
      for (const std::string& source : sources)
        set.push_back({context.get(), device, source, options});
      for (auto& built : jitcache::opencl::build_programs(cache, exchange, set)) {
        failures += !built;
        if (built)
          clReleaseProgram(built->program);
      }
    } else {
      for (const std::string& source : sources) {
        auto built = jitcache::opencl::build_program(cache, context.get(), device, source, options);
        failures += !built;
        if (built)
          clReleaseProgram(built->program);
      }
    }
    cache.flush();
    compiles += cache.session_stats().get("opencl", jitcache::Counter::compiles);
    return failures;
  };
}
#endif

#ifdef JITCACHE_BENCH_CUDA
// The sample CUDA kernels as the tests and bench/cuda build them: the program named by its path
// (so that "cuda_common.cuh" resolves against its directory); CUB (block_reduce.cu) and the
// cooperative groups (transpose.cu) come from the toolkit's include directories, which jitcache
// gives NVRTC itself.
Work cuda_work(const Args& args, const jitcache::Config& config, std::size_t& count) {
  const std::vector<Kernel> all = {{"block_reduce.cu", {}},
                                   {"matmul_tuned.cu", {}},
                                   {"saxpy.cu", {}},
                                   {"scale.cu", {"scale<float, 4>"}},
                                   {"transpose.cu", {}}};
  const std::vector<Kernel> kernels = chosen(all, args);
  std::vector<jitcache::cuda::Offline> set;
  for (const Kernel& kernel : kernels) {
    jitcache::cuda::Program program;
    program.name = args.kernels + "/" + kernel.file;
    program.source = read(program.name);
    program.name_expressions = kernel.name_expressions;
    set.push_back({args.arch, std::move(program)});
  }
  count = set.size();
  const std::string mode = args.mode;
  return [=](std::uint64_t& compiles) {
    int failures = 0;
    jitcache::Cache cache(config);
    if (mode == "cohort") {
      jitcache::mpi::Exchange exchange(MPI_COMM_WORLD);
      for (auto& binary : jitcache::cuda::compile_together(cache, exchange, set)) {
        failures += !binary;
        if (!binary)
          std::fprintf(stderr, "bench_mpi: %s\n", binary.error().message.c_str());
      }
    } else {
      for (const jitcache::cuda::Offline& request : set) {
        auto binary = jitcache::cuda::compile(cache, request.target, request.program);
        failures += !binary;
        if (!binary)
          std::fprintf(stderr, "bench_mpi: %s: %s\n", request.program.name.c_str(),
                       binary.error().message.c_str());
      }
    }
    cache.flush();
    compiles += cache.session_stats().get("cuda", jitcache::Counter::compiles);
    return failures;
  };
}
#endif

} // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Args args;
  bool usage = argc < 4;
  for (int i = 4; i < argc && !usage; i += 2) {
    const std::string option = argv[i];
    if (i + 1 >= argc)
      usage = true;
    else if (option == "--backend")
      args.backend = argv[i + 1];
    else if (option == "--arch")
      args.arch = argv[i + 1];
    else if (option == "--kernel")
      args.kernel = argv[i + 1];
    else
      usage = true;
  }
  if (!usage) {
    args.mode = argv[1];
    args.root = argv[2];
    args.kernels = argv[3];
    usage = (args.backend == "cuda" && args.arch.empty()) ||
            (args.mode == "single" && args.kernel.empty());
  }
  if (usage) {
    if (rank == 0)
      std::fprintf(stderr, "usage: bench_mpi MODE ROOT KERNELS_DIR [--backend opencl|cuda] "
                           "[--arch sm_XY] [--kernel FILE]\n");
    MPI_Finalize();
    return 2;
  }
  const std::string& mode = args.mode;

  const bool shared = mode == "shared";
  const std::string dir = shared ? args.root + "/user" : args.root + "/rank" + std::to_string(rank);
  jitcache::Config config = jitcache::Config::from_environment();
  config = jitcache::Config::from_variables([&] {
    auto variables = config.variables;
    variables["JITCACHE_DIR"] = dir;
    variables["JITCACHE_SYSTEM_PATH"] = ":";
    variables["JITCACHE_OPENCL_STORE"] = "wait";
    if (mode == "none" || mode == "single")
      variables["JITCACHE_DISABLE"] = args.backend;
    if (mode != "redis")
      variables.erase("JITCACHE_REMOTE");
    return variables;
  }());

  Work work;
  std::size_t kernels = 0;
#ifdef JITCACHE_BENCH_OPENCL
  if (args.backend == "opencl")
    work = opencl_work(args, config, kernels);
#endif
#ifdef JITCACHE_BENCH_CUDA
  if (args.backend == "cuda")
    work = cuda_work(args, config, kernels);
#endif
  if (!work || kernels == 0) {
    if (rank == 0)
      std::fprintf(stderr, "bench_mpi: %s\n",
                   work ? "no such kernel" : "backend not built into bench_mpi");
    MPI_Finalize();
    return 2;
  }

  MPI_Barrier(MPI_COMM_WORLD);
  const double cpu_start = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t compiles = 0;
  const int failures = work(compiles);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = cpu_seconds() - cpu_start;

  double job_wall = 0, job_cpu = 0;
  std::uint64_t job_compiles = 0;
  int job_failures = 0;
  MPI_Reduce(&wall, &job_wall, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&cpu, &job_cpu, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&compiles, &job_compiles, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&failures, &job_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  // Each rank's CPU: who compiled, who only received, and what the wait between costs.
  std::vector<double> rank_cpu(rank == 0 ? size : 0);
  MPI_Gather(&cpu, 1, MPI_DOUBLE, rank_cpu.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("{\"mode\":\"%s\",\"ranks\":%d,\"kernels\":%zu,\"wall_s\":%.3f,\"cpu_s\":%.3f,"
                "\"compiles\":%llu,\"failures\":%d,\"rank_cpu_s\":[",
                mode.c_str(), size, kernels, job_wall, job_cpu,
                static_cast<unsigned long long>(job_compiles), job_failures);
    for (int r = 0; r < size; ++r)
      std::printf(r ? ",%.3f" : "%.3f", rank_cpu[static_cast<std::size_t>(r)]);
    std::printf("]}\n");
  }
  work = nullptr; // the OpenCL context is released before MPI_Finalize
  MPI_Finalize();
  return job_failures == 0 ? 0 : 1;
}
