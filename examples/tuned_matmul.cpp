#include "examples/tuned_matmul.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
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
    const int n = std::stoi(problem.at("N"));
    if (n >= 128 && n % 16 == 0)
      return tuning::Parameters{{"TILE", "16"}, {"WPT", "4"}};
    return std::nullopt;
  };
  return family;
}

Expected<std::string> matmul_source(const std::string& kernels_dir) {
  const std::string path = kernels_dir + "/matmul_tuned.cl";
  std::ifstream in(path);
  if (!in)
    return Error(ErrorCode::io_error, "cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

tuning::Problem matmul_problem(int m, int n, int k) {
  return {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}};
}

std::vector<tuning::Parameters> matmul_candidates() {
  std::vector<tuning::Parameters> out;
  for (int tile : {4, 8, 16, 32})
    for (int wpt : {1, 2, 4, 8})
      if (wpt <= tile && tile % wpt == 0)
        out.push_back({{"TILE", std::to_string(tile)}, {"WPT", std::to_string(wpt)}});
  return out;
}

MatmulProblem::MatmulProblem(Cache& cache, cl_context context, cl_device_id device, int m, int n,
                             int k, std::string source, std::string options)
    : m_cache(cache), m_context(context), m_device(device), m_m(m), m_n(n), m_k(k),
      m_source(std::move(source)), m_options(std::move(options)) {
  std::vector<float> a(std::size_t(m) * k), b(std::size_t(k) * n);
  std::uint32_t seed = 12345;
  const auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) - 0.5f;
  };
  for (float& x : a)
    x = next();
  for (float& x : b)
    x = next();
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

tuning::Trials MatmulProblem::trials(std::vector<tuning::Parameters> candidates) {
  tuning::Trials trials;
  trials.candidates = std::move(candidates);
  trials.prepare = [this](const tuning::Parameters& p, const std::string& defines) {
    return prepare(p, defines);
  };
  trials.check = [](std::string_view reference, std::string_view output) {
    if (reference.size() != output.size())
      return false;
    const std::size_t n = reference.size() / sizeof(float);
    for (std::size_t i = 0; i < n; ++i) {
      float r, o;
      std::memcpy(&r, reference.data() + i * sizeof(float), sizeof r);
      std::memcpy(&o, output.data() + i * sizeof(float), sizeof o);
      if (!(std::fabs(r - o) <= 1e-4f * std::max(1.0f, std::fabs(r))))
        return false;
    }
    return true;
  };
  return trials;
}

Expected<std::vector<float>> MatmulProblem::compute(const tuning::Parameters& parameters) {
  auto trial = prepare(parameters, tuning::defines(matmul_family(), parameters));
  if (!trial)
    return std::move(trial).error();
  if (auto ran = trial->run(); !ran)
    return std::move(ran).error();
  const std::string bytes = trial->output();
  std::vector<float> c(bytes.size() / sizeof(float));
  std::memcpy(c.data(), bytes.data(), bytes.size());
  return c;
}

} // namespace jitcache::examples
