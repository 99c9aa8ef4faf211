#pragma once

#include <jitcache/cache.hpp>

#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace jitcache::test {

/// A Cache whose JITCACHE_DIR nobody can write, root included (tests run as root in CI, where a
/// mode bit would not stop it): the folder would lie beneath a regular file. Anything served
/// comes from a tier that needs no file, and nothing can be stored.
struct UnwritableCache {
  TempDir dir;
  std::filesystem::path blocker = dir.path() / "a-file";
  std::unique_ptr<Cache> cache;

  UnwritableCache() {
    std::ofstream(blocker) << "not a folder\n";
    cache = std::make_unique<Cache>(
        Config::from_variables({{"JITCACHE_DIR", (blocker / "jitcache").string()}}));
  }

  /// Checks that nothing was compiled and that `backend` was served `hits` times, every time by
  /// the embedded tier; and that nothing was created on disk.
  void expect_served_by_embedded_tier(const std::string& backend, std::uint64_t hits) const {
    const Stats stats = cache->session_stats();
    EXPECT_EQ(stats.get(backend, Counter::compiles), 0u);
    EXPECT_EQ(stats.get(backend, Counter::misses), 0u);
    EXPECT_EQ(stats.hits(backend, "embedded"), hits);
    EXPECT_EQ(stats.hits(backend), hits);
    EXPECT_TRUE(std::filesystem::is_regular_file(blocker));
  }
};

} // namespace jitcache::test
