#pragma once

#include <jitcache/cache.hpp>
#include <jitcache/hip.hpp>

#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace jitcache::test {

/// A sample from kernels/ as a hip::Program named after its file.
inline hip::Program hip_kernel(const std::string& file) {
  std::ifstream in(std::string(JITCACHE_KERNELS) + "/" + file);
  std::ostringstream buf;
  buf << in.rdbuf();
  hip::Program program;
  program.name = file;
  program.source = buf.str();
  return program;
}

/// A Cache whose user tier is a fresh directory of its own.
struct FreshCache {
  TempDir dir;
  std::unique_ptr<Cache> cache =
      std::make_unique<Cache>(Config::from_variables({{"JITCACHE_DIR", dir.path().string()}}));

  /// A new Cache on the same directory (what a new process sees), replacing the old one.
  Cache& reopen() {
    cache.reset();
    cache =
        std::make_unique<Cache>(Config::from_variables({{"JITCACHE_DIR", dir.path().string()}}));
    return *cache;
  }

  /// Number of "hip" entries in the user tier, after waiting for pending stores.
  int hip_entries() {
    cache->flush();
    int n = 0;
    for (const auto& tier : cache->tiers()) {
      if (tier->name() == "user") {
        EXPECT_TRUE(tier->for_each([&](const Store::Item& item) { n += item.backend == "hip"; }));
      }
    }
    return n;
  }
};

/// Checks, independently of the backend's own parser, that `code` is an AMDGPU ELF code object
/// for `target`: ELF64 little-endian, e_machine EM_AMDGPU (224), the processor's EF_AMDGPU_MACH
/// number in the low byte of e_flags, and the full target id in the metadata note.
inline void expect_code_object(const std::string& code, const std::string& target, unsigned mach) {
  ASSERT_GE(code.size(), 64u);
  EXPECT_EQ(code.compare(0, 4,
                         "\x7f"
                         "ELF"),
            0);
  EXPECT_EQ(code[4], 2) << "ELFCLASS64";
  EXPECT_EQ(code[5], 1) << "ELFDATA2LSB";
  std::uint16_t machine = 0;
  std::uint32_t flags = 0;
  std::memcpy(&machine, code.data() + 18, sizeof machine);
  std::memcpy(&flags, code.data() + 48, sizeof flags);
  EXPECT_EQ(machine, 224) << "EM_AMDGPU";
  EXPECT_EQ(flags & 0xffu, mach) << "EF_AMDGPU_MACH of " << target;
  const std::string named = "amdgcn-amd-amdhsa--" + target;
  const std::size_t at = code.find(named);
  ASSERT_NE(at, std::string::npos) << named << " not in the code object";
  EXPECT_NE(code[at + named.size()], ':') << "a longer target id than " << target;
}

} // namespace jitcache::test
