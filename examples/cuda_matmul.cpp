#include "examples/cuda_matmul.hpp"

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_error.hpp"

#include <sstream>

namespace jitcache::examples {

namespace {

// "-D TILE=16 -D WPT=1" (tuning::defines) as NVRTC's one option per element.
std::vector<std::string> nvrtc_options(const std::string& defines) {
  std::vector<std::string> out;
  std::istringstream words(defines);
  for (std::string word; words >> word;)
    if (word != "-D")
      out.push_back("-D" + word);
  return out;
}

} // namespace

tuning::Family cuda_matmul_family() {
  tuning::Family family;
  family.name = "matmul_tuned_cuda";
  family.parameters = {"TILE", "WPT"};
  family.defaults = {{"TILE", "16"}, {"WPT", "1"}};
  family.heuristic = [](const tuning::Problem& problem,
                        const tuning::Device&) -> std::optional<tuning::Parameters> {
    const auto size = matmul_size(problem);
    if (size && size->n >= 512 && size->m % 32 == 0 && size->n % 32 == 0 && size->k % 32 == 0)
      return tuning::Parameters{{"TILE", "32"}, {"WPT", "4"}};
    return std::nullopt;
  };
  return family;
}

std::vector<tuning::Parameters> cuda_matmul_candidates() {
  return matmul_candidates({8, 16, 32, 64}, 1024);
}

CudaMatmulProblem::CudaMatmulProblem(Cache& cache, int m, int n, int k, std::string source,
                                     std::string name)
    : MatmulTrials(cuda_matmul_family(), m, n, k), m_cache(cache) {
  m_program.source = std::move(source);
  m_program.name = std::move(name);
  auto api = cuda::driver();
  if (!api) {
    m_memory_error = api.error();
    return;
  }
  const auto [a, b] = matmul_inputs(m, n, k);
  const std::size_t c_bytes = std::size_t(m) * n * sizeof(float);
  const std::pair<CUdeviceptr*, std::size_t> buffers[] = {
      {&m_a, a.size() * sizeof(float)}, {&m_b, b.size() * sizeof(float)}, {&m_c, c_bytes}};
  for (const auto& [pointer, bytes] : buffers)
    if (CUresult rc = (*api)->cuMemAlloc(pointer, bytes); rc != CUDA_SUCCESS) {
      m_memory_error = cuda::driver_error(**api, "cuMemAlloc", rc);
      return;
    }
  if (CUresult rc = (*api)->cuMemcpyHtoD(m_a, a.data(), a.size() * sizeof(float));
      rc != CUDA_SUCCESS)
    m_memory_error = cuda::driver_error(**api, "cuMemcpyHtoD", rc);
  else if (rc = (*api)->cuMemcpyHtoD(m_b, b.data(), b.size() * sizeof(float)); rc != CUDA_SUCCESS)
    m_memory_error = cuda::driver_error(**api, "cuMemcpyHtoD", rc);
}

CudaMatmulProblem::~CudaMatmulProblem() {
  m_modules.clear();
  if (auto api = cuda::driver())
    for (CUdeviceptr pointer : {m_a, m_b, m_c})
      if (pointer)
        (*api)->cuMemFree(pointer);
}

Expected<tuning::Trial> CudaMatmulProblem::prepare(const tuning::Parameters& parameters,
                                                   const std::string& defines) {
  if (m_memory_error)
    return *m_memory_error;
  int tile = 0, wpt = 0;
  try {
    tile = std::stoi(parameters.at("TILE"));
    wpt = std::stoi(parameters.at("WPT"));
  } catch (const std::exception&) {
    return Error(ErrorCode::invalid_argument, "TILE and WPT must be numbers");
  }
  if (tile <= 0 || wpt <= 0 || tile % wpt != 0 || m_m % tile != 0 || m_n % tile != 0 ||
      m_k % tile != 0 || (tile / wpt) * tile > 1024)
    return Error(ErrorCode::invalid_argument,
                 "TILE must divide M, N and K, WPT TILE, and a block have at most 1024 threads");
  cuda::Program program = m_program;
  program.options = nvrtc_options(defines);
  auto module = cuda::load_module(m_cache, program);
  if (!module)
    return std::move(module).error();
  auto function = module->function("matmul_tuned");
  if (!function)
    return std::move(function).error();
  m_modules.push_back(std::move(*module));
  const cuda::DriverApi* api = *cuda::driver(); // load_module needed it
  const unsigned threads_x = unsigned(tile / wpt), threads_y = unsigned(tile);
  const unsigned blocks_x = unsigned(m_n / tile), blocks_y = unsigned(m_m / tile);
  const CUfunction kernel = *function;
  const int m = m_m, n = m_n, k = m_k;
  const CUdeviceptr a = m_a, b = m_b, c = m_c;
  tuning::Trial trial;
  trial.run = [=]() -> Expected<void> {
    int mm = m, nn = n, kk = k;
    CUdeviceptr aa = a, bb = b, cc = c;
    void* arguments[] = {&mm, &nn, &kk, &aa, &bb, &cc};
    if (CUresult rc = api->cuLaunchKernel(kernel, blocks_x, blocks_y, 1, threads_x, threads_y, 1, 0,
                                          nullptr, arguments, nullptr);
        rc != CUDA_SUCCESS)
      return cuda::driver_error(*api, "cuLaunchKernel", rc);
    if (CUresult rc = api->cuCtxSynchronize(); rc != CUDA_SUCCESS)
      return cuda::driver_error(*api, "cuCtxSynchronize", rc);
    return {};
  };
  const std::size_t bytes = std::size_t(m) * n * sizeof(float);
  trial.output = [=] {
    std::string out(bytes, '\0');
    if (api->cuMemcpyDtoH(out.data(), c, bytes) != CUDA_SUCCESS)
      out.clear(); // no result: the check refuses it
    return out;
  };
  return trial;
}

} // namespace jitcache::examples
