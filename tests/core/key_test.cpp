#include <jitcache/key.hpp>

#include "core/key/key_fields.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace jitcache {
namespace {

KeyBuilder base() {
  KeyBuilder b("opencl");
  b.device("device_name", "gpu").toolchain("driver", "1.0").options("-O2").source("kernel");
  b.header("a.h", "int a;");
  return b;
}

TEST(KeyTest, SameInputsSameDigest) {
  EXPECT_EQ(base().finish().digest, base().finish().digest);
}

TEST(KeyTest, EveryFieldChangesTheKey) {
  const Digest reference = base().finish().digest;
  std::set<Digest> seen{reference};
  auto variant = [&](auto&& mutate) {
    KeyBuilder b("opencl");
    mutate(b);
    const Digest d = b.finish().digest;
    EXPECT_TRUE(seen.insert(d).second) << "collided with an earlier variant";
  };
  variant([](KeyBuilder& b) { // device value
    b.device("device_name", "gpu2").toolchain("driver", "1.0").options("-O2").source("kernel");
    b.header("a.h", "int a;");
  });
  variant([](KeyBuilder& b) { // toolchain value
    b.device("device_name", "gpu").toolchain("driver", "1.1").options("-O2").source("kernel");
    b.header("a.h", "int a;");
  });
  variant([](KeyBuilder& b) { // options
    b.device("device_name", "gpu").toolchain("driver", "1.0").options("-O3").source("kernel");
    b.header("a.h", "int a;");
  });
  variant([](KeyBuilder& b) { // source
    b.device("device_name", "gpu").toolchain("driver", "1.0").options("-O2").source("kernel2");
    b.header("a.h", "int a;");
  });
  variant([](KeyBuilder& b) { // header content
    b.device("device_name", "gpu").toolchain("driver", "1.0").options("-O2").source("kernel");
    b.header("a.h", "int b;");
  });
  variant([](KeyBuilder& b) { // header path
    b.device("device_name", "gpu").toolchain("driver", "1.0").options("-O2").source("kernel");
    b.header("b.h", "int a;");
  });
  variant([](KeyBuilder& b) { // header missing
    b.device("device_name", "gpu").toolchain("driver", "1.0").options("-O2").source("kernel");
  });
  KeyBuilder other_backend("cuda");
  other_backend.device("device_name", "gpu").toolchain("driver", "1.0").options("-O2");
  other_backend.source("kernel").header("a.h", "int a;");
  EXPECT_TRUE(seen.insert(other_backend.finish().digest).second);
}

TEST(KeyTest, FieldBoundariesMatter) {
  KeyBuilder a("opencl"), b("opencl");
  a.options("-I -O2");
  b.options("-I-O2");
  EXPECT_NE(a.finish().digest, b.finish().digest);

  // Moving bytes between adjacent fields must change the key.
  KeyBuilder c("opencl"), d("opencl");
  c.device("x", "ab").device("y", "c");
  d.device("x", "a").device("y", "bc");
  EXPECT_NE(c.finish().digest, d.finish().digest);

  // A value cannot masquerade as a name.
  KeyBuilder e("opencl"), f("opencl");
  e.device("xy", "");
  f.device("x", "y");
  EXPECT_NE(e.finish().digest, f.finish().digest);
}

TEST(KeyTest, SectionsHashInFixedOrder) {
  KeyBuilder a("hip"), b("hip");
  a.source("s").options("-O1").device("arch", "gfx90a");
  b.device("arch", "gfx90a").options("-O1").source("s");
  const Key ka = a.finish();
  EXPECT_EQ(ka.digest, b.finish().digest);
  ASSERT_GE(ka.fields.size(), 5u);
  EXPECT_EQ(ka.fields[0].name, "key_schema");
  EXPECT_EQ(ka.fields[1].value, "hip");
  EXPECT_EQ(ka.fields[2].section, KeySection::device);
  EXPECT_EQ(ka.fields[3].section, KeySection::options);
  EXPECT_EQ(ka.fields[4].section, KeySection::source);
}

// A long value (a header) is stored as its SHA-256, remembered per process: the same bytes give
// the same stored form each time, and other bytes of the same size another.
TEST(KeyTest, LongValuesAreStoredByTheirDigestEachTimeAlike) {
  const std::string header(64 * 1024, 'a');
  std::string other = header;
  other[40000] = 'b';
  const auto stored = [](const std::string& content) {
    KeyBuilder builder("cuda");
    builder.header("big.h", content);
    return builder.finish().stored_fields;
  };
  const std::string first = stored(header);
  EXPECT_NE(first.find("sha256:" + Digest::of(header).hex()), std::string::npos);
  EXPECT_EQ(stored(header), first);
  const std::string changed = stored(other);
  EXPECT_NE(changed, first);
  EXPECT_NE(changed.find("sha256:" + Digest::of(other).hex()), std::string::npos);
  EXPECT_EQ(stored(header), first);
}

// A header given in its stored form makes the key its content makes, short or long; another
// form (the long content's digest without its prefix) makes another key.
TEST(KeyTest, AHeaderGivenInItsStoredFormMakesTheSameKey) {
  for (const std::string& content : {std::string("int a;"), std::string(129, 'h')}) {
    KeyBuilder by_content = base();
    by_content.header("b.h", content, "/inc/b.h");
    KeyBuilder by_stored = base();
    by_stored.stored_header("b.h", detail::stored_value(content), "/inc/b.h");
    const Key a = std::move(by_content).finish();
    const Key b = std::move(by_stored).finish();
    EXPECT_EQ(a.digest, b.digest) << content.size();
    EXPECT_EQ(a.stored_fields, b.stored_fields);
    EXPECT_EQ(b.fields.back().value, detail::stored_value(content));
  }
  const std::string long_content(129, 'h');
  KeyBuilder bare = base();
  bare.stored_header("b.h", Digest::of(long_content).hex());
  KeyBuilder by_content = base();
  by_content.header("b.h", long_content);
  EXPECT_NE(std::move(bare).finish().digest, std::move(by_content).finish().digest);
}

TEST(DigestTest, HexRoundTrip) {
  const Digest d = Digest::of("abc");
  EXPECT_EQ(d.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto parsed = Digest::from_hex(d.hex());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, d);
  EXPECT_FALSE(Digest::from_hex("xyz"));
  EXPECT_FALSE(Digest::from_hex(std::string(64, 'g')));
}

} // namespace
} // namespace jitcache
