// One cold or warm start of an MPI job that builds the sample OpenCL kernels on every rank (PoCL),
// in one of the ways a job can share (or not) its compiles; run by bench/mpi/run.py under
// mpirun, which starts the job once per mode, start and repetition and prints medians.
//
// usage: bench_mpi MODE ROOT KERNELS_DIR
//   MODE: none     no cache: clBuildProgram from source on every rank
//         shared   one user tier for the job (ROOT/user), build_program per kernel (leases)
//         per_rank a user tier per rank (ROOT/rank<N>), build_program per kernel: the
//                  workaround users adopt
//         redis    a user tier per rank and the Redis remote tier (JITCACHE_REMOTE, set by
//                  run.py), build_program per kernel (the fleet's compile lease)
//         cohort   a user tier per rank (no shared filesystem), build_programs over MPI
// Rank 0 prints one JSON line: the job's wall time (the slowest rank's, from a barrier), the
// CPU time of all ranks (user + system, children included), the compiles of all ranks.
#include <jitcache/mpi.hpp>
#include <jitcache/opencl.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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

} // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4) {
    if (rank == 0)
      std::fprintf(stderr, "usage: bench_mpi MODE ROOT KERNELS_DIR\n");
    MPI_Finalize();
    return 2;
  }
  const std::string mode = argv[1], root = argv[2], kernels = argv[3];
  const std::string options = "-I " + kernels;
  std::vector<std::string> sources;
  for (const char* name : {"matmul.cl", "nbody.cl", "reduce.cl", "stencil.cl", "vector_ops.cl"})
    sources.push_back(read(kernels + "/" + name));

  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  clGetPlatformIDs(1, &platform, nullptr);
  clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
  cl_int rc = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);

  const bool shared = mode == "shared";
  const std::string dir = shared ? root + "/user" : root + "/rank" + std::to_string(rank);
  jitcache::Config config = jitcache::Config::from_environment();
  config = jitcache::Config::from_variables([&] {
    auto variables = config.variables;
    variables["JITCACHE_DIR"] = dir;
    variables["JITCACHE_SYSTEM_PATH"] = ":";
    variables["JITCACHE_OPENCL_STORE"] = "wait";
    if (mode != "redis")
      variables.erase("JITCACHE_REMOTE");
    return variables;
  }());

  MPI_Barrier(MPI_COMM_WORLD);
  const double cpu_start = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t compiles = 0;
  int failures = 0;
  if (mode == "none") {
    for (const std::string& source : sources) {
      const char* text = source.c_str();
      cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &rc);
      failures +=
          clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr) != CL_SUCCESS;
      clReleaseProgram(program);
      ++compiles;
    }
  } else {
    jitcache::Cache cache(config);
    if (mode == "cohort") {
      jitcache::mpi::Exchange exchange(MPI_COMM_WORLD);
      std::vector<jitcache::opencl::Request> set;
      for (const std::string& source : sources)
        set.push_back({context, device, source, options});
      for (auto& built : jitcache::opencl::build_programs(cache, exchange, set)) {
        failures += !built;
        if (built)
          clReleaseProgram(built->program);
      }
    } else {
      for (const std::string& source : sources) {
        auto built = jitcache::opencl::build_program(cache, context, device, source, options);
        failures += !built;
        if (built)
          clReleaseProgram(built->program);
      }
    }
    cache.flush();
    compiles = cache.session_stats().get("opencl", jitcache::Counter::compiles);
  }
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
                mode.c_str(), size, sources.size(), job_wall, job_cpu,
                static_cast<unsigned long long>(job_compiles), job_failures);
    for (int r = 0; r < size; ++r)
      std::printf(r ? ",%.3f" : "%.3f", rank_cpu[static_cast<std::size_t>(r)]);
    std::printf("]}\n");
  }
  clReleaseContext(context);
  MPI_Finalize();
  return job_failures == 0 ? 0 : 1;
}
