// One application run of the issue-17 workload, for bench/opencl/first_run.py: builds every FILE
// (options "-I DIR"), launches no kernel, and exits. Modes:
//   pocl DIR FILE...      plain clCreateProgramWithSource + clBuildProgram (PoCL's own cache)
//   jitcache DIR FILE...  jitcache::opencl::build_program through a Cache from the environment
// Prints one JSON line at exit, after the Cache is gone: wall_s (from main to exit, context
// creation included), cpu_s (this process, getrusage) and children_cpu_s (its waited-for
// children: the short-lived process that starts the detached store), outcomes.
#include <jitcache/opencl.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include <sys/resource.h>

namespace {

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

double cpu_s(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

[[noreturn]] void die(const std::string& what) {
  std::cerr << "bench_first_run: " << what << "\n";
  std::exit(1);
}

} // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  if (argc < 4)
    die("usage: bench_first_run pocl|jitcache DIR FILE...");
  const std::string mode = argv[1];
  const std::string options = std::string("-I ") + argv[2];
  cl_platform_id platform;
  cl_device_id device;
  if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS)
    die("no OpenCL device");
  cl_int rc = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
  if (rc != CL_SUCCESS)
    die("clCreateContext failed");
  std::map<std::string, int> outcomes;
  {
    std::unique_ptr<jitcache::Cache> cache;
    if (mode == "jitcache")
      cache = std::make_unique<jitcache::Cache>();
    else if (mode != "pocl")
      die("unknown mode " + mode);
    for (int i = 3; i < argc; ++i) {
      const std::string source = slurp(argv[i]);
      cl_program program = nullptr;
      if (cache) {
        auto built = jitcache::opencl::build_program(*cache, context, device, source, options);
        if (!built)
          die(argv[i] + (": " + built.error().message));
        program = built->program;
        ++outcomes[jitcache::to_string(built->info.outcome)];
      } else {
        const char* text = source.c_str();
        program = clCreateProgramWithSource(context, 1, &text, nullptr, &rc);
        if (rc != CL_SUCCESS ||
            clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr) != CL_SUCCESS)
          die(std::string(argv[i]) + ": build failed");
        ++outcomes["built"];
      }
      clReleaseProgram(program);
    }
  } // the Cache's destructor: stores, or hands them over
  clReleaseContext(context);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << nlohmann::json{{"mode", mode},
                              {"wall_s", wall},
                              {"cpu_s", cpu_s(RUSAGE_SELF)},
                              {"children_cpu_s", cpu_s(RUSAGE_CHILDREN)},
                              {"outcomes", outcomes}}
                   .dump()
            << std::endl;
  return 0;
}
