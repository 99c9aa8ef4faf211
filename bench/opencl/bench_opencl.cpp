// One measurement per process, for bench/opencl/compare.py. Modes:
//   jitcache FILE   build through jitcache (cold or warm depending on JITCACHE_DIR), launch all
//   source FILE     plain clCreateProgramWithSource + clBuildProgram (PoCL's own cache applies
//                   unless POCL_KERNEL_CACHE=0), launch all
//   raw FILE BIN    plain clCreateProgramWithBinary + clBuildProgram of BIN, launch all
//   export FILE BIN write the binary jitcache stored for FILE to BIN (for "raw")
//   repeat FILE     the same build_program call again and again in one process (memory tier)
// Prints one JSON line: build_ms (until the program is built) and first_launch_ms (until the
// first launch of every kernel has finished), both measured after context creation.
#include <jitcache/opencl.hpp>

#include "core/engine/cache_core.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

[[noreturn]] void die(const std::string& what) {
  std::cerr << "bench_opencl: " << what << "\n";
  std::exit(1);
}

void check(cl_int rc, const char* what) {
  if (rc != CL_SUCCESS)
    die(std::string(what) + " failed: " + std::to_string(rc));
}

// Launches every kernel of `program` once, as bench/opencl/kernels.json describes, and waits.
void launch_all(cl_context context, cl_device_id device, cl_program program,
                const nlohmann::json& kernels) {
  cl_int rc;
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &rc);
  check(rc, "clCreateCommandQueue");
  std::vector<cl_mem> buffers;
  std::vector<cl_kernel> made;
  for (auto it = kernels.begin(); it != kernels.end(); ++it) {
    cl_kernel kernel = clCreateKernel(program, it.key().c_str(), &rc);
    check(rc, "clCreateKernel");
    made.push_back(kernel);
    cl_uint index = 0;
    for (const std::string arg : it.value()["args"]) {
      if (arg == "b") {
        std::vector<float> init(4 * 65536, 0.5f);
        cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                  init.size() * sizeof(float), init.data(), &rc);
        check(rc, "clCreateBuffer");
        buffers.push_back(m);
        check(clSetKernelArg(kernel, index, sizeof m, &m), "clSetKernelArg");
      } else if (arg.rfind("n:", 0) == 0) {
        int v = std::stoi(arg.substr(2));
        check(clSetKernelArg(kernel, index, sizeof v, &v), "clSetKernelArg");
      } else {
        float v = std::stof(arg.substr(2));
        check(clSetKernelArg(kernel, index, sizeof v, &v), "clSetKernelArg");
      }
      ++index;
    }
    const std::size_t global = it.value()["global"];
    std::size_t local = it.value().value("local", 0);
    check(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, local ? &local : nullptr, 0,
                                 nullptr, nullptr),
          "clEnqueueNDRangeKernel");
  }
  check(clFinish(queue), "clFinish");
  for (cl_kernel k : made)
    clReleaseKernel(k);
  for (cl_mem m : buffers)
    clReleaseMemObject(m);
  clReleaseCommandQueue(queue);
}

cl_program build_from_source(cl_context context, cl_device_id device, const std::string& source,
                             const std::string& options) {
  const char* text = source.c_str();
  cl_int rc;
  cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &rc);
  check(rc, "clCreateProgramWithSource");
  check(clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr), "clBuildProgram");
  return program;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3)
    die("usage: bench_opencl MODE FILE [BIN]");
  const std::string mode = argv[1], file = argv[2];
  const std::string dir = file.substr(0, file.rfind('/'));
  const std::string name = file.substr(file.rfind('/') + 1);
  const std::string options = "-I " + dir;
  const std::string source = slurp(file);
  const nlohmann::json table = nlohmann::json::parse(slurp(dir + "/../bench/opencl/kernels.json"));

  cl_platform_id platform;
  cl_device_id device;
  check(clGetPlatformIDs(1, &platform, nullptr), "clGetPlatformIDs");
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs");
  cl_int rc;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
  check(rc, "clCreateContext");

  nlohmann::json out = {{"mode", mode}, {"file", name}};
  if (mode == "repeat") {
    // A 10 KB source: the sample padded with a comment.
    std::string big =
        source + "\n//" +
        std::string(std::max<std::size_t>(10240, source.size()) - source.size(), 'x') + "\n";
    big.resize(10240);
    big.back() = '\n';
    jitcache::Cache cache;
    auto first = jitcache::opencl::build_program(cache, context, device, big, options);
    if (!first)
      die(first.error().message);
    clReleaseProgram(first->program);
    cache.flush(); // a miss's store runs on a background thread: not while measuring
    const auto& handles = jitcache::detail::core_of(cache).handles();
    const std::uint64_t stats_before = handles.stat_checks();
    // Wall time, and this thread's CPU time: on a machine shared with other work the latter
    // is what the call costs, without the time it waited for a core.
    std::vector<double> per_call_ns, cpu_per_call_ns;
    std::uint64_t calls = 0, memory_hits = 0;
    for (int batch = 0; batch < 21; ++batch) {
      const int n = 20000;
      const double cpu = thread_cpu_ns();
      auto t = clock_type::now();
      for (int i = 0; i < n; ++i) {
        auto p = jitcache::opencl::build_program(cache, context, device, big, options);
        memory_hits += p->info.tier == "memory";
        clReleaseProgram(p->program);
      }
      per_call_ns.push_back(ms_since(t) * 1e6 / n);
      cpu_per_call_ns.push_back((thread_cpu_ns() - cpu) / n);
      calls += n;
    }
    std::sort(per_call_ns.begin(), per_call_ns.end());
    std::sort(cpu_per_call_ns.begin(), cpu_per_call_ns.end());
    out["source_bytes"] = big.size();
    out["median_ns_per_call"] = per_call_ns[per_call_ns.size() / 2];
    out["median_cpu_ns_per_call"] = cpu_per_call_ns[cpu_per_call_ns.size() / 2];
    // The path measured: memory hits through the request shortcut; how many of them had to
    // stat the files its key was built from (files changed within 2 s cannot vouch at all,
    // and every call then builds the key again).
    out["memory_hits"] = memory_hits;
    out["calls"] = calls;
    out["hits_that_stat"] = handles.stat_checks() - stats_before;
    std::cout << out.dump() << "\n";
    return 0;
  }

  if (mode == "export") {
    jitcache::Cache cache;
    auto key = jitcache::opencl::make_key(cache.config(), device, source, options);
    auto found = key ? cache.lookup(*key) : std::nullopt;
    if (!found)
      die("nothing stored for " + file);
    std::ofstream(argv[3], std::ios::binary) << found->entry.payload;
    return 0;
  }

  auto t0 = clock_type::now();
  cl_program program = nullptr;
  jitcache::Cache* cache = nullptr;
  if (mode == "jitcache") {
    cache = new jitcache::Cache();
    auto built = jitcache::opencl::build_program(*cache, context, device, source, options);
    if (!built)
      die(built.error().message);
    program = built->program;
    out["outcome"] = jitcache::to_string(built->info.outcome);
    out["tier"] = built->info.tier;
  } else if (mode == "source") {
    program = build_from_source(context, device, source, options);
  } else if (mode == "raw") {
    if (argc < 4)
      die("raw needs BIN");
    const std::string binary = slurp(argv[3]);
    const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
    const std::size_t size = binary.size();
    cl_int status;
    program = clCreateProgramWithBinary(context, 1, &device, &size, &bytes, &status, &rc);
    check(rc, "clCreateProgramWithBinary");
    check(clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr), "clBuildProgram");
  } else {
    die("unknown mode " + mode);
  }
  out["build_ms"] = ms_since(t0);
  launch_all(context, device, program, table.at(name));
  out["first_launch_ms"] = ms_since(t0);
  clReleaseProgram(program);
  delete cache; // flushes a miss's binary into the user tier (not timed)
  clReleaseContext(context);
  std::cout << out.dump() << "\n";
  return 0;
}
