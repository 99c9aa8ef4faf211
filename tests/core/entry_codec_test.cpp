#include "core/key/key_fields.hpp"
#include "core/tiers/entry_codec.hpp"

#include <jitcache/key.hpp>

#include <gtest/gtest.h>

namespace jitcache {

using detail::decode_entry;
using detail::decode_key_fields;
using detail::encode_entry;
using detail::encode_key_fields;
using detail::k_entry_header_size;
using detail::verify_entry;
namespace {

const Digest k_key = Digest::of("key");

Entry sample() {
  return Entry{"opencl",
               std::string("\x7f"
                           "ELF binary\0bytes",
                           17),
               "meta", 1234};
}

TEST(EntryCodecTest, RoundTrip) {
  const std::string bytes = encode_entry(k_key, sample());
  EXPECT_EQ(bytes.size(), k_entry_header_size + 6 + 4 + 17);

  auto entry = decode_entry(k_key, bytes);
  ASSERT_TRUE(entry) << entry.error().message;
  EXPECT_EQ(entry->backend, "opencl");
  EXPECT_EQ(entry->payload, sample().payload);
  EXPECT_EQ(entry->metadata, "meta");
  EXPECT_EQ(entry->compile_ns, 1234u);
  EXPECT_EQ(verify_entry(k_key, bytes).value(), "opencl");
}

TEST(EntryCodecTest, KeyFieldsRoundTripAndLongValuesAreDigested) {
  const Key key = KeyBuilder("opencl").options("-O2").source(std::string(1000, 's')).finish();
  Entry entry = sample();
  entry.key_fields = encode_key_fields(key.fields);
  auto back = decode_entry(k_key, encode_entry(k_key, entry));
  ASSERT_TRUE(back);
  auto fields = decode_key_fields(back->key_fields);
  ASSERT_TRUE(fields);
  ASSERT_EQ(fields->size(), key.fields.size());
  EXPECT_EQ((*fields)[2].value, "-O2");
  EXPECT_EQ((*fields)[3].value, "sha256:" + Digest::of(std::string(1000, 's')).hex());
  EXPECT_FALSE(decode_key_fields("\x01\xff\xff"));
}

TEST(EntryCodecTest, EveryFlippedByteIsDetected) {
  const std::string good = encode_entry(k_key, sample());
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x01;
    auto entry = decode_entry(k_key, bad);
    ASSERT_FALSE(entry) << "flip at byte " << i << " went unnoticed";
    EXPECT_EQ(entry.error().code, ErrorCode::corrupt);
  }
}

TEST(EntryCodecTest, TruncationAndWrongKeyAreDetected) {
  const std::string good = encode_entry(k_key, sample());
  for (std::size_t n : {std::size_t(0), std::size_t(10), k_entry_header_size, good.size() - 1})
    EXPECT_FALSE(decode_entry(k_key, good.substr(0, n))) << n;
  auto other = decode_entry(Digest::of("other"), good);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("different key"), std::string::npos);
}

} // namespace
} // namespace jitcache
