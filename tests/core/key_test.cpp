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

// A header set of contents and the set of their stored forms make one key and store the same
// fields; a set in another form (a long content's digest without its prefix) makes another key,
// and a set does not hash as its fields added one by one, nor as one header that spells its
// digest.
TEST(KeyTest, AHeaderSetOfStoredFormsMakesTheKeyItsContentsMake) {
  const std::string long_content(129, 'h');
  const auto set = [](std::vector<std::string> values) {
    std::vector<KeyField> fields;
    for (std::size_t i = 0; i < values.size(); ++i)
      fields.push_back({KeySection::header, "h" + std::to_string(i) + ".h", values[i],
                        "/inc/h" + std::to_string(i) + ".h"});
    return std::make_shared<const HeaderSet>(std::move(fields));
  };
  const auto key_of = [](std::shared_ptr<const HeaderSet> headers) {
    KeyBuilder builder = base();
    builder.headers(std::move(headers));
    return std::move(builder).finish();
  };
  const auto contents = set({"int a;", long_content});
  const auto stored = set({"int a;", detail::stored_value(long_content)});
  const Key a = key_of(contents);
  const Key b = key_of(stored);
  EXPECT_EQ(contents->digest(), stored->digest());
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.stored_fields, b.stored_fields);
  EXPECT_EQ(all_fields(b).back().value, detail::stored_value(long_content));
  EXPECT_EQ(all_fields(b).back().detail, "/inc/h1.h");
  EXPECT_NE(key_of(set({"int a;", Digest::of(long_content).hex()})).digest, a.digest);

  KeyBuilder one_by_one = base();
  one_by_one.header("h0.h", "int a;", "/inc/h0.h").header("h1.h", long_content, "/inc/h1.h");
  const Key c = std::move(one_by_one).finish();
  EXPECT_NE(c.digest, a.digest);
  EXPECT_EQ(c.stored_fields, a.stored_fields); // stored alike: explain compares them
  KeyBuilder spelled = base();
  spelled.header("header set", "sha256:" + contents->digest().hex());
  EXPECT_NE(std::move(spelled).finish().digest, a.digest);
}

// A header set is hashed after the headers added one by one, whatever the order they were added
// in; its fields follow theirs in all_fields() and in the stored fields, and an empty set adds
// nothing.
TEST(KeyTest, HeaderSetsFollowTheHeadersAddedOneByOne) {
  const auto headers = std::make_shared<const HeaderSet>(
      std::vector<KeyField>{{KeySection::header, "s.h", "int s;", "/inc/s.h"}});
  KeyBuilder set_first = base();
  set_first.headers(headers).header("m.h", "int m;");
  KeyBuilder set_last = base();
  set_last.header("m.h", "int m;").headers(headers);
  const Key a = std::move(set_first).finish();
  const Key b = std::move(set_last).finish();
  EXPECT_EQ(a.digest, b.digest);
  const auto fields = all_fields(a);
  ASSERT_GE(fields.size(), 2u);
  EXPECT_EQ(fields[fields.size() - 2].name, "m.h");
  EXPECT_EQ(fields.back().name, "s.h");
  EXPECT_EQ(a.header_sets.size(), 1u);
  EXPECT_EQ(a.fields.size() + 1, fields.size());

  KeyBuilder with_empty = base();
  with_empty.header("m.h", "int m;")
      .headers(std::make_shared<const HeaderSet>(std::vector<KeyField>{}))
      .headers(nullptr);
  KeyBuilder without = base();
  without.header("m.h", "int m;");
  const Key e = std::move(with_empty).finish();
  EXPECT_EQ(e.digest, std::move(without).finish().digest);
  EXPECT_TRUE(e.header_sets.empty());
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
