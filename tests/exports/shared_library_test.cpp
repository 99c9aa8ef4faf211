// Links against libjitcache.so alone (no static archive): every call here must resolve through
// the library's exported symbols, and BadExpectedAccess (type info and vtable in the library)
// must be caught by its type.
#include <jitcache/jitcache.hpp>

#include <gtest/gtest.h>

#include <string>

namespace jitcache {
namespace {

TEST(SharedLibraryTest, CompilesOnceThenHitsTheMemoryTier) {
  Cache cache(Config::from_variables({{"JITCACHE_DISABLE", "1"}}));
  const Key key = KeyBuilder("opencl").options("-O2").source("kernel").finish();
  int compiles = 0;
  const auto compile = [&] {
    ++compiles;
    return Expected<Entry>(Entry{"opencl", "binary"});
  };
  BuildInfo info;
  auto first = cache.get_or_compile(key, compile, &info);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(to_string(info.outcome), std::string("miss"));
  auto second = cache.get_or_compile(key, compile, &info);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->entry.payload, "binary");
  EXPECT_EQ(second->tier, "memory");
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(Digest::from_hex(key.digest.hex()), key.digest);
}

TEST(SharedLibraryTest, FreeFunctionsResolve) {
  EXPECT_EQ(parse_size("1K"), 1024u);
  EXPECT_EQ(format_size(1024), "1.0 KiB");
  EXPECT_EQ(to_string(ErrorCode::corrupt), std::string("corrupt"));
  EXPECT_EQ(to_string(KeySection::source), std::string("source"));
}

TEST(SharedLibraryTest, MisuseThrowsBadExpectedAccessAcrossTheLibrary) {
  Cache cache(Config::from_variables({{"JITCACHE_DISABLE", "1"}}));
  const Key key = KeyBuilder("opencl").source("fails").finish();
  auto failed = cache.get_or_compile(key, [] {
    return Expected<Entry>(Error{ErrorCode::compile_failed, "syntax error"});
  });
  EXPECT_THROW((void)failed.value(), BadExpectedAccess);
}

} // namespace
} // namespace jitcache
