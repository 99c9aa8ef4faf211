// This program embeds two files through jitcache_embed_packages() (CMakeLists.txt): the source
// tree's kernels/vector_ops.cl and all_bytes.bin, made at build time. Their constructor registers
// them before main(), before any Cache exists.
#include "core/tiers/packages/embedded_packages.hpp"

#include <jitcache/embed.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace jitcache {
namespace {

std::string read_file(const char* path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

TEST(EmbeddedPackagesTest, HoldsTheEmbeddedFilesByteForByteInTheirOrder) {
  const auto packages = detail::embedded_packages();
  ASSERT_GE(packages.size(), 2u);
  EXPECT_EQ(packages[0].name, "vector_ops.cl");
  EXPECT_EQ(packages[0].bytes, read_file(EMBED_SOURCE_PACKAGE));
  EXPECT_EQ(packages[1].name, "all_bytes.bin");
  const std::string generated = read_file(EMBED_GENERATED_PACKAGE);
  ASSERT_EQ(generated.size(), 256u * 400 + 3);
  EXPECT_EQ(packages[1].bytes, generated);
}

TEST(EmbeddedPackagesTest, EachPackageStartsOn64Bytes) {
  for (const auto& package : detail::embedded_packages())
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(package.bytes.data()) % 64, 0u) << package.name;
}

TEST(EmbeddedPackagesTest, RegistersNewBytesOnceAndIgnoresEmptyOnes) {
  static const char bytes[] = "package bytes";
  const size_t before = detail::embedded_packages().size();
  jitcache_register_embedded_package("late.jcpkg", bytes, sizeof bytes);
  jitcache_register_embedded_package("again.jcpkg", bytes, sizeof bytes);
  jitcache_register_embedded_package(nullptr, bytes, sizeof bytes);
  jitcache_register_embedded_package("null.jcpkg", nullptr, 1);
  jitcache_register_embedded_package("empty.jcpkg", bytes, 0);
  const auto packages = detail::embedded_packages();
  ASSERT_EQ(packages.size(), before + 1);
  EXPECT_EQ(packages.back().name, "late.jcpkg");
  EXPECT_EQ(packages.back().bytes, std::string(bytes, sizeof bytes));
}

} // namespace
} // namespace jitcache
