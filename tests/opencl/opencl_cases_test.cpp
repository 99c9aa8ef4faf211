// The OpenCL backend through the tables every backend passes alike (tests/support/backend_cases):
// counters after every call, and every user-tier operation failing in turn, on PoCL.
#include <jitcache/opencl.hpp>

#include "backends/opencl/opencl_key.hpp"
#include "tests/support/backend_cases.hpp"
#include "tests/support/sample_kernels.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace jitcache {
namespace {
using test::k_options;

std::string sample_source() {
  std::ifstream in(std::string(JITCACHE_KERNELS) + "/vector_ops.cl");
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// y = 2x + y through the program's saxpy kernel; an error naming what went wrong.
Expected<void> check_saxpy(cl_context context, cl_device_id device, cl_program program) {
  constexpr int n = 256;
  std::vector<float> x(n), y(n, 1.0f);
  for (int i = 0; i < n; ++i)
    x[i] = static_cast<float>(i);
  cl_int rc = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, "saxpy", &rc);
  if (rc != CL_SUCCESS)
    return Error(ErrorCode::runtime_error, "no saxpy kernel in the program");
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &rc);
  const std::size_t bytes = n * sizeof(float);
  cl_mem bx =
      clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, x.data(), &rc);
  cl_mem by =
      clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, y.data(), &rc);
  const float a = 2.0f;
  const int count = n;
  clSetKernelArg(kernel, 0, sizeof bx, &bx);
  clSetKernelArg(kernel, 1, sizeof by, &by);
  clSetKernelArg(kernel, 2, sizeof a, &a);
  clSetKernelArg(kernel, 3, sizeof count, &count);
  const std::size_t global = n;
  rc = clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr);
  if (rc == CL_SUCCESS)
    rc = clEnqueueReadBuffer(queue, by, CL_TRUE, 0, bytes, y.data(), 0, nullptr, nullptr);
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  clReleaseCommandQueue(queue);
  clReleaseKernel(kernel);
  if (rc != CL_SUCCESS)
    return Error(ErrorCode::runtime_error, "saxpy did not run: " + std::to_string(rc));
  for (int i = 0; i < n; ++i)
    if (y[i] != 2.0f * i + 1.0f)
      return Error(ErrorCode::runtime_error, "saxpy computed a wrong y[" + std::to_string(i) + "]");
  return {};
}

class OpenclCase : public test::BackendCase {
public:
  OpenclCase() {
    cl_platform_id platform = nullptr;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) == CL_SUCCESS && n > 0 &&
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &m_device, nullptr) == CL_SUCCESS)
      m_context = clCreateContext(nullptr, 1, &m_device, nullptr, nullptr, nullptr);
  }
  ~OpenclCase() override {
    if (m_context)
      clReleaseContext(m_context);
  }
  bool ready() const { return m_context != nullptr; }

  std::string backend() const override { return "opencl"; }
  bool loads() const override { return true; }
  Expected<BuildInfo> build(Cache& cache) override {
    auto program = opencl::build_program(cache, m_context, m_device, m_source, k_options);
    if (!program)
      return std::move(program).error();
    auto checked = check_saxpy(m_context, m_device, program->program);
    clReleaseProgram(program->program);
    if (!checked)
      return std::move(checked).error();
    return program->info;
  }
  Expected<BuildInfo> build_broken(Cache& cache) override {
    auto program = opencl::build_program(cache, m_context, m_device,
                                         "__kernel void k(__global float* x) { x[0] = y; }", "");
    if (!program)
      return std::move(program).error();
    clReleaseProgram(program->program);
    return program->info;
  }
  Expected<Key> key(const Config& config) override {
    return opencl::make_key(config, m_device, m_source, k_options);
  }

  Expected<Key> key_by_another_compiler(const Config& config) override {
    auto id = opencl::identity(m_device);
    if (!id)
      return std::move(id).error();
    id->toolchain.emplace_back("another_build", "1");
    return opencl::key_for(*id, config, m_source, k_options);
  }

private:
  cl_context m_context = nullptr;
  cl_device_id m_device = nullptr;
  const std::string m_source = sample_source();
};

TEST(OpenclCases, CountersAfterEveryCall) {
  OpenclCase backend;
  ASSERT_TRUE(backend.ready()) << "no OpenCL device (PoCL)";
  test::expect_counter_table(backend);
}

TEST(OpenclCases, EveryUserTierFaultStillGivesTheKernelWithOneWarning) {
  test::expect_faults_contained([] { return std::make_unique<OpenclCase>(); });
}

TEST(OpenclCases, APackageMadeWithAnotherCompilerServesWithoutCompiling) {
  OpenclCase backend;
  ASSERT_TRUE(backend.ready()) << "no OpenCL device (PoCL)";
  test::expect_packages_first(backend);
}

TEST(OpenclCases, ARememberedKeyWhoseEntryWasEvictedIsCompiledAgain) {
  OpenclCase backend;
  ASSERT_TRUE(backend.ready()) << "no OpenCL device (PoCL)";
  test::expect_remembered_key_evicted(backend);
}

} // namespace
} // namespace jitcache
