// Builds an OpenCL kernel file through jitcache (C++ API) on the first OpenCL device and prints
// how it was served: "outcome=hit tier=user". Usage: app_cpp KERNEL.cl INCLUDE_DIR
#include <jitcache/opencl.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: app_cpp KERNEL.cl INCLUDE_DIR\n";
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::stringstream source;
  source << file.rdbuf();
  cl_platform_id platform;
  cl_device_id device;
  cl_int err = clGetPlatformIDs(1, &platform, nullptr);
  if (err == CL_SUCCESS)
    err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
  cl_context context =
      err == CL_SUCCESS ? clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err) : nullptr;
  if (err != CL_SUCCESS) {
    std::cerr << "no OpenCL device (" << err << ")\n";
    return 1;
  }
  int status = 0;
  {
    jitcache::Cache cache;
    auto built = jitcache::opencl::build_program(cache, context, device, source.str(),
                                                 std::string("-I ") + argv[2]);
    if (!built) {
      std::cerr << built.error().message << "\n" << built.error().log;
      status = 1;
    } else {
      std::cout << "outcome=" << jitcache::to_string(built->info.outcome)
                << " tier=" << built->info.tier << "\n";
      clReleaseProgram(built->program);
    }
  }
  clReleaseContext(context);
  return status;
}
