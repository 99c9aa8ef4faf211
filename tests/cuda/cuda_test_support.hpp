#pragma once

#include "backends/cuda/cuda_api.hpp"

#include <jitcache/cuda.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace jitcache::test {

inline std::string read_kernel(const std::string& file) {
  std::ifstream in(std::string(JITCACHE_KERNELS) + "/" + file);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

/// A sample kernel as a program named by its path, so that its "x" includes resolve in kernels/.
inline cuda::Program kernel_program(const std::string& file,
                                    std::vector<std::string> name_expressions = {}) {
  cuda::Program program;
  program.source = read_kernel(file);
  program.name = std::string(JITCACHE_KERNELS) + "/" + file;
  program.name_expressions = std::move(name_expressions);
  return program;
}

/// Number of entries of `backend` in the cache's user tier.
inline std::size_t user_entries(Cache& cache, const std::string& backend = "cuda") {
  std::size_t n = 0;
  for (const auto& tier : cache.tiers())
    if (tier->name() == "user") {
      EXPECT_TRUE(tier->for_each([&](const Store::Item& item) { n += item.backend == backend; }));
    }
  return n;
}

/// The SM number a cubin's ELF header names, or nullopt when it is no CUDA ELF. CUDA 13 cubins
/// (EI_ABIVERSION 8) keep it in bits 8..15 of e_flags, older ones in bits 0..7.
inline std::optional<int> cubin_sm(const std::string& cubin) {
  constexpr std::uint16_t k_em_cuda = 190;
  constexpr int k_elfclass64 = 2;
  if (cubin.size() < 64 || cubin.compare(0, 4, "\177ELF") != 0 || cubin[4] != k_elfclass64)
    return std::nullopt;
  std::uint16_t machine = 0;
  std::uint32_t flags = 0;
  std::memcpy(&machine, cubin.data() + 18, sizeof machine);
  std::memcpy(&flags, cubin.data() + 48, sizeof flags);
  if (machine != k_em_cuda)
    return std::nullopt;
  const int abi_version = static_cast<unsigned char>(cubin[8]);
  return static_cast<int>(abi_version >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
}

/// Device 0's primary context, current on this thread while the object lives; `driver` is null
/// when there is no driver or no GPU (GPU tests skip then). Declare it before any Cache whose
/// modules live in it, so that the modules are unloaded before the context is released.
class GpuContext {
public:
  GpuContext() {
    auto api = cuda::driver();
    int count = 0;
    if (!api || (*api)->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
      return;
    if ((*api)->cuDeviceGet(&m_device, 0) != CUDA_SUCCESS ||
        (*api)->cuDevicePrimaryCtxRetain(&m_context, m_device) != CUDA_SUCCESS)
      return;
    (*api)->cuCtxSetCurrent(m_context);
    driver = *api;
  }
  ~GpuContext() {
    if (driver)
      driver->cuDevicePrimaryCtxRelease(m_device);
  }
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  const cuda::DriverApi* driver = nullptr;

private:
  CUdevice m_device = 0;
  CUcontext m_context = nullptr;
};

} // namespace jitcache::test
