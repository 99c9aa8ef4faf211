#include "core/engine/request_hash.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace jitcache {
namespace {

using detail::RequestHash;
using detail::RequestHasher;

RequestHash hash_of(std::initializer_list<std::string_view> parts) {
  RequestHasher hasher;
  for (std::string_view part : parts)
    hasher.add(part);
  return hasher.digest();
}

bool same(const RequestHash& a, const RequestHash& b) {
  return !(a < b) && !(b < a);
}

TEST(RequestHashTest, TheSamePartsHashAlike) {
  const std::string source(10000, 'x');
  EXPECT_TRUE(same(hash_of({"-I inc", source}), hash_of({"-I inc", std::string(10000, 'x')})));
}

TEST(RequestHashTest, PartsAreDelimitedSoMovingBytesAcrossABoundaryChangesTheHash) {
  EXPECT_FALSE(same(hash_of({"-I", "-O2"}), hash_of({"-I-O2"})));
  EXPECT_FALSE(same(hash_of({"ab", "c"}), hash_of({"a", "bc"})));
  EXPECT_FALSE(same(hash_of({"", "a"}), hash_of({"a", ""})));
  EXPECT_FALSE(same(hash_of({"a"}), hash_of({"a", ""})));
}

TEST(RequestHashTest, ACountedListDiffersFromItsPartsAlone) {
  RequestHasher counted;
  counted.add_count(1);
  counted.add("a");
  EXPECT_FALSE(same(counted.digest(), hash_of({"a"})));
  RequestHasher empty_list;
  empty_list.add_count(0);
  EXPECT_FALSE(same(empty_list.digest(), RequestHasher().digest()));
}

TEST(RequestHashTest, TheBytesAreTheDigest) {
  const RequestHash a = hash_of({"a"});
  const RequestHash b = hash_of({"b"});
  EXPECT_EQ(a.bytes().size(), 16u);
  EXPECT_NE(a.bytes(), b.bytes());
  EXPECT_EQ(a.bytes(), hash_of({"a"}).bytes());
}

} // namespace
} // namespace jitcache
