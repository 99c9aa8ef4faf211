#include "core/byte_io.hpp"
#include "core/entry_codec.hpp"
#include "core/key_fields.hpp"
#include "core/package_format.hpp"
#include "core/package_store.hpp"
#include "tests/support/temp_dir.hpp"

#include <jitcache/config.hpp>
#include <jitcache/key.hpp>
#include <jitcache/version.hpp>

#include <gtest/gtest.h>
#include <xxhash.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>

namespace jitcache::detail {
namespace {

namespace fs = std::filesystem;

Key key_for(const std::string& arch, int i) {
  return KeyBuilder("cuda")
      .device("compute_capability", arch.substr(3))
      .device("target_arch", arch)
      .source("kernel " + std::to_string(i))
      .finish();
}

// `count` entries for `arch` whose payloads are `payload_bytes` long (and say which they are).
std::vector<PackageEntry> entries_for(const std::string& arch, int count,
                                      std::size_t payload_bytes = 32, char fill = 'b') {
  std::vector<PackageEntry> entries;
  for (int i = 0; i < count; ++i) {
    const Key key = key_for(arch, i);
    std::string payload(payload_bytes, fill);
    payload.replace(0, std::min(payload.size(), arch.size()), arch.substr(0, payload.size()));
    Entry entry("cuda", payload, "meta", 1000 + i);
    entry.key_fields = key.stored_fields;
    entries.push_back({key.digest, encode_entry(key.digest, entry)});
  }
  return entries;
}

PackageTarget target(const std::string& arch) {
  return target_of("cuda", key_for(arch, 0).fields);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A package written to `dir` and read back.
std::string make_package(const fs::path& dir, const std::string& arch, int count,
                         std::size_t payload_bytes = 32) {
  const fs::path file = dir / ("cuda-" + arch + ".jcpkg");
  auto written = write_package(file, target(arch), entries_for(arch, count, payload_bytes));
  EXPECT_TRUE(written) << written.error().message;
  return read_file(file);
}

// What a reader over `bytes` makes of every key it should hold: never a wrong binary.
// Returns how many entries were served intact.
int served_intact(std::string_view bytes, const std::string& arch, int count) {
  auto reader = PackageReader::open(bytes);
  if (!reader)
    return -1;
  int intact = 0;
  for (int i = 0; i < count; ++i) {
    const Key key = key_for(arch, i);
    auto found = reader->find(key.digest);
    if (!found)
      continue;
    auto view = view_entry(key.digest, *found);
    if (!view)
      continue;
    EXPECT_EQ(view->payload.substr(0, arch.size()), arch);
    EXPECT_EQ(view->key_fields, key.stored_fields);
    ++intact;
  }
  for (std::size_t i = 0; i < reader->size(); ++i)
    static_cast<void>(verify_entry(reader->at(i).first, reader->at(i).second));
  return intact;
}

TEST(PackageFormatTest, WritesAndFindsEveryEntryWithItsProvenance) {
  test::TempDir dir;
  const std::string bytes = make_package(dir.path(), "sm_90", 50);
  auto reader = PackageReader::open(bytes);
  ASSERT_TRUE(reader) << reader.error().message;
  const Provenance& p = reader->provenance();
  EXPECT_EQ(p.jitcache_version, k_version);
  EXPECT_EQ(p.target.backend, "cuda");
  EXPECT_EQ(p.target.label, "sm_90");
  EXPECT_EQ(p.entries, 50u);
  EXPECT_EQ(p.bytes, bytes.size());
  EXPECT_GT(p.created, 1600000000);
  EXPECT_EQ(served_intact(bytes, "sm_90", 50), 50);
  EXPECT_FALSE(reader->find(key_for("sm_80", 0).digest));
  EXPECT_EQ(package_file_name(p.target), "cuda-sm_90.jcpkg");
  EXPECT_EQ((fs::status(dir.path() / "cuda-sm_90.jcpkg").permissions() & fs::perms::others_read),
            fs::perms::others_read);
}

TEST(PackageFormatTest, ProvenanceListsTheToolchainsItsEntriesWereMadeWithOnce) {
  test::TempDir dir;
  std::vector<PackageEntry> entries;
  const char* versions[] = {"12.8", "13.0", "12.8", nullptr};
  for (int i = 0; i < 4; ++i) {
    KeyBuilder builder("cuda");
    builder.device("compute_capability", "9.0").device("target_arch", "sm_90");
    if (versions[i])
      builder.toolchain("nvrtc_version", versions[i]).toolchain("nvrtc_build", "1 bytes");
    const Key key = builder.source("kernel " + std::to_string(i)).finish();
    Entry entry("cuda", "payload", "meta", 1);
    entry.key_fields = key.stored_fields;
    entries.push_back({key.digest, encode_entry(key.digest, entry)});
  }
  const fs::path file = dir.path() / "cuda-sm_90.jcpkg";
  ASSERT_TRUE(write_package(file, target("sm_90"), entries));
  const std::string bytes = read_file(file);
  auto reader = PackageReader::open(bytes);
  ASSERT_TRUE(reader) << reader.error().message;
  std::vector<std::string> versions_listed;
  for (const std::string& stored : reader->provenance().toolchains) {
    auto fields = decode_key_fields(stored);
    ASSERT_TRUE(fields);
    ASSERT_EQ(fields->size(), 2u);
    EXPECT_EQ((*fields)[0].section, KeySection::toolchain);
    EXPECT_EQ((*fields)[1].value, "1 bytes");
    versions_listed.push_back((*fields)[0].value);
  }
  // In key order (the package sorts its entries), each identity once; none for the entry
  // without toolchain fields.
  std::sort(versions_listed.begin(), versions_listed.end());
  EXPECT_EQ(versions_listed, (std::vector<std::string>{"12.8", "13.0"}));
  // The same through a tier of packages, for the target served, and only for it.
  auto store = PackageStore::open_system({file}, false);
  EXPECT_EQ(store->toolchains(target("sm_90")), reader->provenance().toolchains);
  EXPECT_TRUE(store->toolchains(target("sm_80")).empty());
}

TEST(PackageFormatTest, ReadsAtAnyAlignment) {
  test::TempDir dir;
  const std::string bytes = make_package(dir.path(), "sm_80", 5);
  for (std::size_t shift = 1; shift < 8; ++shift) {
    const std::string shifted = std::string(shift, 'x') + bytes;
    EXPECT_EQ(served_intact(std::string_view(shifted).substr(shift), "sm_80", 5), 5) << shift;
  }
}

TEST(PackageFormatTest, EmptyPackageIsValid) {
  test::TempDir dir;
  const std::string bytes = make_package(dir.path(), "sm_80", 0);
  auto reader = PackageReader::open(bytes);
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->size(), 0u);
  EXPECT_FALSE(reader->find(key_for("sm_80", 0).digest));
}

TEST(PackageFormatTest, RefusesOtherFormatVersionsNamingThem) {
  test::TempDir dir;
  std::string bytes = make_package(dir.path(), "sm_80", 3);
  std::string other = bytes;
  store_le<std::uint32_t>(other.data() + 4, k_package_version + 1);
  auto reader = PackageReader::open(other);
  ASSERT_FALSE(reader);
  EXPECT_NE(reader.error().message.find("format version " + std::to_string(k_package_version + 1)),
            std::string::npos)
      << reader.error().message;
  // Entries of another entry format: the header says so (and is checksummed).
  other = bytes;
  store_le<std::uint32_t>(other.data() + 16, k_format_version + 1);
  const std::size_t data = load_le<std::uint64_t>(other.data() + 40);
  store_le<std::uint64_t>(other.data() + 8, XXH3_64bits(other.data() + 16, data - 16));
  reader = PackageReader::open(other);
  ASSERT_FALSE(reader);
  EXPECT_NE(reader.error().message.find("entries of format version"), std::string::npos)
      << reader.error().message;
}

TEST(PackageFormatTest, RefusesTruncatedAndExtendedBytes) {
  test::TempDir dir;
  const std::string bytes = make_package(dir.path(), "sm_80", 3);
  for (std::size_t size : {std::size_t(0), std::size_t(10), std::size_t(47), std::size_t(48),
                           bytes.size() / 2, bytes.size() - 1})
    EXPECT_FALSE(PackageReader::open(std::string_view(bytes).substr(0, size))) << size;
  EXPECT_FALSE(PackageReader::open(bytes + "x"));
}

TEST(PackageFormatTest, RefusesAnIndexOutOfOrderEvenWithAValidChecksum) {
  test::TempDir dir;
  std::string bytes = make_package(dir.path(), "sm_80", 3);
  const std::size_t data = load_le<std::uint64_t>(bytes.data() + 40);
  const std::size_t index = data - 3 * k_package_index_record;
  std::string first = bytes.substr(index, k_package_index_record);
  bytes.replace(index, k_package_index_record, bytes.substr(index + 48, 48));
  bytes.replace(index + 48, k_package_index_record, first);
  store_le<std::uint64_t>(bytes.data() + 8, XXH3_64bits(bytes.data() + 16, data - 16));
  auto reader = PackageReader::open(bytes);
  ASSERT_FALSE(reader);
  EXPECT_NE(reader.error().message.find("out of order"), std::string::npos);
}

// Every byte flipped in turn: the package is refused, or each entry is served intact or
// missed; never a crash, never a wrong binary.
TEST(PackageFormatTest, EveryByteFlippedIsRefusedOrAMiss) {
  test::TempDir dir;
  const std::string bytes = make_package(dir.path(), "sm_80", 3, 16);
  int refused = 0, partly = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
    const int intact = served_intact(damaged, "sm_80", 3);
    refused += intact < 0;
    partly += intact >= 0 && intact < 3;
    EXPECT_NE(intact, 3) << "byte " << i << " flipped went unnoticed";
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(partly, 0);
}

// Random damage in a large package, and a mutation loop (the fuzz harness): random bytes set,
// ranges cut or repeated, lengths rewritten. Bounded: a fixed seed and count.
TEST(PackageFormatTest, MutationLoopNeverCrashesNorServesAWrongBinary) {
  test::TempDir dir;
  const std::string large = make_package(dir.path(), "sm_90", 300, 256);
  const std::string small = make_package(dir.path(), "sm_80", 4, 24);
  std::mt19937_64 random(13);
  for (int round = 0; round < 3000; ++round) {
    const bool big = round % 10 == 0;
    std::string bytes = big ? large : small;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const std::size_t at = random() % bytes.size();
      switch (random() % 5) {
      case 0:
        bytes[at] = static_cast<char>(random());
        break;
      case 1:
        bytes.erase(at, random() % 64);
        break;
      case 2:
        bytes.insert(at, bytes.substr(random() % bytes.size(), random() % 64));
        break;
      case 3: // a plausible length where one is read
        if (at + 8 <= bytes.size())
          store_le<std::uint64_t>(bytes.data() + at, random() % (bytes.size() * 2));
        break;
      default:
        bytes.resize(at);
        break;
      }
    }
    const int intact = served_intact(bytes, big ? "sm_90" : "sm_80", big ? 300 : 4);
    EXPECT_LE(intact, big ? 300 : 4);
  }
}

TEST(PackageFormatTest, WriterRefusesASymlinkAndLeavesNoTemporaryFile) {
  test::TempDir dir;
  const fs::path elsewhere = dir.path() / "elsewhere";
  write_file(elsewhere, "keep");
  const fs::path link = dir.path() / "cuda-sm_80.jcpkg";
  fs::create_symlink(elsewhere, link);
  auto written = write_package(link, target("sm_80"), entries_for("sm_80", 2));
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message.find("symbolic link"), std::string::npos);
  EXPECT_EQ(read_file(elsewhere), "keep");
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path()))
    ++files;
  EXPECT_EQ(files, 2);
}

TEST(PackageFormatTest, WriterReplacesAnExistingPackageWhole) {
  test::TempDir dir;
  const fs::path file = dir.path() / "p.jcpkg";
  ASSERT_TRUE(write_package(file, target("sm_80"), entries_for("sm_80", 2)));
  ASSERT_TRUE(write_package(file, target("sm_80"), entries_for("sm_80", 5)));
  EXPECT_EQ(served_intact(read_file(file), "sm_80", 5), 5);
}

class PackageStoreTest : public testing::Test {
protected:
  test::TempDir m_dir;
};

TEST_F(PackageStoreTest, SystemTierServesInPlaceAndIsReadOnly) {
  make_package(m_dir.path(), "sm_80", 4);
  auto store = PackageStore::open_system({m_dir.path()}, false);
  ASSERT_EQ(store->packages().size(), 1u);
  EXPECT_EQ(store->name(), "system");
  EXPECT_FALSE(store->writable());
  const Key key = key_for("sm_80", 2);
  const char* begin = store->packages()[0].file->bytes().data();
  const std::size_t size = store->packages()[0].file->bytes().size();
  auto seen = store->visit(key.digest, [&](const EntryView& view) {
    EXPECT_EQ(view.key_fields, key.stored_fields);
    EXPECT_GE(view.payload.data(), begin); // in place: no copy
    EXPECT_LE(view.payload.data() + view.payload.size(), begin + size);
  });
  ASSERT_TRUE(seen);
  EXPECT_TRUE(*seen);
  EXPECT_FALSE(store->get(key_for("sm_90", 0).digest).value());
  EXPECT_EQ(store->put(key.digest, Entry{}).error().code, ErrorCode::read_only);
  EXPECT_EQ(store->remove(key.digest).error().code, ErrorCode::read_only);
  int listed = 0;
  ASSERT_TRUE(store->for_each([&](const Store::Item& item) { listed += item.valid; }));
  EXPECT_EQ(listed, 4);
}

TEST_F(PackageStoreTest, BadPathsAreEachWarnedAboutAndTheRestIsUsed) {
  // A folder on the path holding a good package, a directory named like a package and a
  // truncated package; and a file on the path that does not exist.
  make_package(m_dir.path(), "sm_80", 2);
  const fs::path missing = m_dir.path() / "missing.jcpkg";
  const fs::path folder = m_dir.path() / "folder.jcpkg";
  fs::create_directory(folder);
  const fs::path truncated = m_dir.path() / "cuda-sm_90.jcpkg";
  const std::string whole = make_package(m_dir.path(), "sm_90", 2);
  write_file(truncated, whole.substr(0, whole.size() - 5));
  testing::internal::CaptureStderr();
  auto store = PackageStore::open_system({missing, m_dir.path()}, false);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(store->packages().size(), 1u);
  EXPECT_EQ(store->packages()[0].name, (m_dir.path() / "cuda-sm_80.jcpkg").string());
  EXPECT_NE(err.find(missing.string() + " does not exist"), std::string::npos) << err;
  EXPECT_NE(err.find(folder.string() + ": is a directory"), std::string::npos) << err;
  EXPECT_NE(err.find(truncated.string() + ": package is"), std::string::npos) << err;
  // The build's default folder, absent before anything is installed there, is no news.
  testing::internal::CaptureStderr();
  auto quiet = PackageStore::open_system({m_dir.path() / "nowhere"}, true);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(quiet->packages().empty());
}

TEST_F(PackageStoreTest, DamagedEntryIsACountedMissWithOneWarning) {
  std::string bytes = make_package(m_dir.path(), "sm_80", 2, 64);
  auto reader = PackageReader::open(bytes);
  const Key key = key_for("sm_80", 1);
  const std::size_t at = static_cast<std::size_t>(reader->find(key.digest)->data() - bytes.data());
  bytes[at + k_entry_header_size + 10] ^= 1;
  const fs::path file = m_dir.path() / "cuda-sm_80.jcpkg";
  write_file(file, bytes);
  auto store = PackageStore::open_system({file}, false);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(store->get(key.digest).value());
  EXPECT_FALSE(store->get(key.digest).value());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(store->corrupt_seen(), 1u); // counted once, as warned once
  EXPECT_NE(err.find("is damaged"), std::string::npos);
  EXPECT_EQ(err.find("is damaged"), err.rfind("is damaged")) << err;
  EXPECT_TRUE(store->get(key_for("sm_80", 0).digest).value());
}

TEST_F(PackageStoreTest, SameKeyWithDifferentBinariesWarnsNamingBothAndTheFirstWins) {
  const fs::path a = m_dir.path() / "a.jcpkg", b = m_dir.path() / "b.jcpkg";
  ASSERT_TRUE(write_package(a, target("sm_80"), entries_for("sm_80", 2, 32, 'a')));
  ASSERT_TRUE(write_package(b, target("sm_80"), entries_for("sm_80", 2, 32, 'z')));
  auto store = PackageStore::open_system({m_dir.path()}, false);
  ASSERT_EQ(store->packages().size(), 2u);
  testing::internal::CaptureStderr();
  auto entry = store->get(key_for("sm_80", 0).digest).value();
  static_cast<void>(store->get(key_for("sm_80", 1).digest));
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->payload.back(), 'a');
  EXPECT_NE(err.find(a.string() + " and " + b.string()), std::string::npos) << err;
  EXPECT_EQ(err.find("different binaries"), err.rfind("different binaries")) << err;
}

TEST_F(PackageStoreTest, NoticeOncePerBackendWhenNoPackageServesTheTarget) {
  make_package(m_dir.path(), "sm_80", 12);
  auto store = PackageStore::open_system({m_dir.path()}, false);
  testing::internal::CaptureStderr();
  store->check_target(key_for("sm_80", 0));
  store->check_target(key_for("sm_90", 0));
  store->check_target(key_for("sm_90", 1));
  store->check_target(KeyBuilder("hip").device("target", "gfx90a").finish());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("no cuda package for sm_90 in the system tier; installed: cuda-sm_80.jcpkg "
                     "(sm_80, 12 entries)"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("no cuda package"), err.rfind("no cuda package")) << err;
  EXPECT_EQ(err.find("hip"), std::string::npos) << err;
}

TEST_F(PackageStoreTest, EmbeddedTierReadsLinkedBytesAndRefusesDamagedOnes) {
  const std::string good = make_package(m_dir.path(), "sm_80", 3);
  const std::string bad = good.substr(0, 100);
  testing::internal::CaptureStderr();
  auto store = PackageStore::open_embedded(
      {EmbeddedPackage{"cuda-sm_80.jcpkg", good}, EmbeddedPackage{"broken.jcpkg", bad}});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(store->name(), "embedded");
  ASSERT_EQ(store->packages().size(), 1u);
  EXPECT_NE(err.find("broken.jcpkg"), std::string::npos) << err;
  EXPECT_TRUE(store->get(key_for("sm_80", 2).digest).value());
}

TEST(PackageConfigTest, SystemPathDefaultsToTheBuildsFolderAndColonMeansNone) {
  const Config unset = Config::from_variables({});
  // One folder, the build's (JITCACHE_DEFAULT_SYSTEM_PATH; none when configured empty).
  EXPECT_EQ(unset.system_path.size(), unset.system_path_default ? 1u : 0u);
  const Config none = Config::from_variables({{"JITCACHE_SYSTEM_PATH", ":"}});
  EXPECT_FALSE(none.system_path_default);
  EXPECT_TRUE(none.system_path.empty());
  const Config set = Config::from_variables({{"JITCACHE_SYSTEM_PATH", "/a.jcpkg:/b"}});
  EXPECT_FALSE(set.system_path_default);
  EXPECT_EQ(set.system_path, (std::vector<fs::path>{"/a.jcpkg", "/b"}));
}

} // namespace
} // namespace jitcache::detail
