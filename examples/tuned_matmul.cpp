#include "examples/tuned_matmul.hpp"

#include <memory>

namespace jitcache::examples {

namespace {

Error cl_error(const char* call, cl_int rc) {
  return Error(ErrorCode::runtime_error,
               std::string(call) + " failed (" + std::to_string(rc) + ")");
}

} // namespace

tuning::Family matmul_family() {
  tuning::Family family;
  family.name = "matmul_tuned";
  family.parameters = {"TILE", "WPT"};
  family.defaults = {{"TILE", "8"}, {"WPT", "1"}};
  family.heuristic = [](const tuning::Problem& problem,
                        const tuning::Device&) -> std::optional<tuning::Parameters> {
    const auto size = matmul_size(problem);
    if (size && size->n >= 128 && size->m % 16 == 0 && size->n % 16 == 0 && size->k % 16 == 0)
      return tuning::Parameters{{"TILE", "16"}, {"WPT", "4"}};
    return std::nullopt;
  };
  return family;
}

MatmulProblem::MatmulProblem(Cache& cache, cl_context context, cl_device_id device, int m, int n,
                             int k, std::string source, std::string options)
    : MatmulTrials(matmul_family(), m, n, k), m_cache(cache), m_context(context), m_device(device),
      m_source(std::move(source)), m_options(std::move(options)) {
  auto [a, b] = matmul_inputs(m, n, k);
  cl_int rc = CL_SUCCESS;
  m_queue = clCreateCommandQueue(context, device, 0, &rc);
  m_a = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, a.size() * sizeof(float),
                       a.data(), &rc);
  m_b = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, b.size() * sizeof(float),
                       b.data(), &rc);
  m_c =
      clCreateBuffer(context, CL_MEM_WRITE_ONLY, std::size_t(m) * n * sizeof(float), nullptr, &rc);
}

MatmulProblem::~MatmulProblem() {
  for (cl_kernel kernel : m_kernels)
    clReleaseKernel(kernel);
  for (cl_mem mem : {m_a, m_b, m_c})
    if (mem)
      clReleaseMemObject(mem);
  if (m_queue)
    clReleaseCommandQueue(m_queue);
}

Expected<tuning::Trial> MatmulProblem::prepare(const tuning::Parameters& parameters,
                                               const std::string& defines) {
  int tile = 0, wpt = 0;
  try {
    tile = std::stoi(parameters.at("TILE"));
    wpt = std::stoi(parameters.at("WPT"));
  } catch (const std::exception&) {
    tile = wpt = 0; // not numbers: let the compiler say what is wrong
  }
  if (tile > 0 && wpt > 0 &&
      (tile % wpt != 0 || m_m % tile != 0 || m_n % tile != 0 || m_k % tile != 0))
    return Error(ErrorCode::invalid_argument, "TILE must divide M, N and K, and WPT TILE");
  auto built = opencl::build_program(m_cache, m_context, m_device, m_source,
                                     m_options.empty() ? defines : m_options + " " + defines);
  if (!built)
    return std::move(built).error();
  if (tile <= 0 || wpt <= 0) {
    clReleaseProgram(built->program);
    return Error(ErrorCode::invalid_argument, "TILE and WPT must be positive numbers");
  }
  cl_int rc = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(built->program, "matmul_tuned", &rc);
  clReleaseProgram(built->program); // the kernel keeps it
  if (rc != CL_SUCCESS)
    return cl_error("clCreateKernel", rc);
  m_kernels.push_back(kernel);
  clSetKernelArg(kernel, 0, sizeof m_m, &m_m);
  clSetKernelArg(kernel, 1, sizeof m_n, &m_n);
  clSetKernelArg(kernel, 2, sizeof m_k, &m_k);
  clSetKernelArg(kernel, 3, sizeof m_a, &m_a);
  clSetKernelArg(kernel, 4, sizeof m_b, &m_b);
  clSetKernelArg(kernel, 5, sizeof m_c, &m_c);
  const std::size_t global[2] = {std::size_t(m_n / wpt), std::size_t(m_m)};
  const std::size_t local[2] = {std::size_t(tile / wpt), std::size_t(tile)};
  tuning::Trial trial;
  cl_command_queue queue = m_queue;
  trial.run = [=]() -> Expected<void> {
    if (cl_int r =
            clEnqueueNDRangeKernel(queue, kernel, 2, nullptr, global, local, 0, nullptr, nullptr);
        r != CL_SUCCESS)
      return cl_error("clEnqueueNDRangeKernel", r);
    if (cl_int r = clFinish(queue); r != CL_SUCCESS)
      return cl_error("clFinish", r);
    return {};
  };
  const std::size_t bytes = std::size_t(m_m) * m_n * sizeof(float);
  cl_mem c = m_c;
  trial.output = [=] {
    std::string out(bytes, '\0');
    clEnqueueReadBuffer(queue, c, CL_TRUE, 0, bytes, out.data(), 0, nullptr, nullptr);
    return out;
  };
  return trial;
}

} // namespace jitcache::examples
