#include "bindings/c/c_api.hpp"
#include "core/key/key_fields.hpp"
#include "core/support/byte_io.hpp"
#include "core/support/mapped_file.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "core/tiers/packages/package_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/hostile_trials.hpp"
#include "tests/support/temp_dir.hpp"

#include <jitcache/config.hpp>
#include <jitcache/jitcache.h>
#include <jitcache/key.hpp>
#include <jitcache/version.hpp>

#include <gtest/gtest.h>
#include <xxhash.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>

namespace jitcache::detail {
namespace {
using test::read_file;

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

// `count` records, named in their own domain (not key digests) from the `first`-th on, each
// `size` bytes long (more when that is too short to say which it is and of which `version`).
std::vector<PackageRecord> records_for(int count, std::size_t size = 48,
                                       const std::string& version = "v1", int first = 0) {
  std::vector<PackageRecord> records;
  for (int i = first; i < first + count; ++i) {
    std::string bytes = "record " + std::to_string(i) + " " + version + ":";
    while (bytes.size() < size)
      bytes += std::to_string(i * 104729 + static_cast<int>(bytes.size()));
    bytes.resize(std::max(size, bytes.find(':') + 1));
    records.push_back({Digest::of("record name " + std::to_string(i)), bytes});
  }
  return records;
}

// What a reader over `bytes` makes of every record it should hold (`right`: what each name may
// be read as), by name and by position: an error or a miss, never a wrong record. Returns how
// many were read intact by name (-1: the package is refused).
int records_intact(std::string_view bytes, const std::map<Digest, std::set<std::string>>& right) {
  auto reader = PackageReader::open(bytes);
  if (!reader)
    return -1;
  int intact = 0;
  for (const auto& [name, accepted] : right) {
    auto read = reader->read_record(name);
    if (!read || !*read)
      continue;
    EXPECT_EQ(accepted.count(**read), 1u) << "a wrong record for " << name.hex();
    ++intact;
  }
  for (std::size_t i = 0; i < reader->record_count(); ++i) {
    auto read = reader->read_record_at(i);
    if (!read)
      continue;
    const auto it = right.find(read->first);
    const bool known = it != right.end() && it->second.count(read->second) == 1;
    EXPECT_TRUE(known) << "a wrong record at " << i << ", named " << read->first.hex();
  }
  return intact;
}

std::map<Digest, std::set<std::string>> accepted(const std::vector<PackageRecord>& records) {
  std::map<Digest, std::set<std::string>> right;
  for (const PackageRecord& record : records)
    right[record.name].insert(record.bytes);
  return right;
}

// A package file holding `entries` and `records` in `dir`, read back.
std::string make_package_with(const fs::path& dir, const std::string& arch,
                              std::vector<PackageEntry> entries,
                              std::vector<PackageRecord> records) {
  const fs::path file = dir / ("cuda-" + arch + "-records.jcpkg");
  auto written = write_package(file, target(arch), std::move(entries), std::move(records));
  EXPECT_TRUE(written) << written.error().message;
  return read_file(file);
}

// A version 2 package (jitcache before records), made here by hand from the layout that
// package_format.hpp draws, not by the writer: a 48-byte header, the provenance, the entry
// index, the entries.
std::string v2_package(const PackageTarget& served, std::vector<PackageEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const PackageEntry& a, const PackageEntry& b) { return a.key < b.key; });
  std::string provenance;
  for (const std::string& field : {std::string("0.9.0"), std::string("1700000000"), served.backend,
                                   served.label, served.identity, std::string()})
    append_counted(provenance, field);
  const std::uint64_t data = 48 + provenance.size() + 48 * entries.size();
  std::string bytes(48, '\0');
  std::memcpy(bytes.data(), "JCPK", 4);
  store_le<std::uint32_t>(bytes.data() + 4, 2);
  store_le<std::uint32_t>(bytes.data() + 16, static_cast<std::uint32_t>(k_format_version));
  store_le<std::uint32_t>(bytes.data() + 20, static_cast<std::uint32_t>(provenance.size()));
  store_le<std::uint64_t>(bytes.data() + 24, entries.size());
  store_le<std::uint64_t>(bytes.data() + 40, data);
  bytes += provenance;
  std::uint64_t offset = data;
  for (const PackageEntry& entry : entries) {
    bytes.append(reinterpret_cast<const char*>(entry.key.bytes.data()), 32);
    append_le<std::uint64_t>(bytes, offset);
    append_le<std::uint64_t>(bytes, entry.bytes.size());
    offset += entry.bytes.size();
  }
  store_le<std::uint64_t>(bytes.data() + 8, XXH3_64bits(bytes.data() + 16, bytes.size() - 16));
  for (const PackageEntry& entry : entries)
    bytes += entry.bytes;
  store_le<std::uint64_t>(bytes.data() + 32, bytes.size());
  // The total size is covered by the checksum: computed again now that it is known.
  store_le<std::uint64_t>(bytes.data() + 8, XXH3_64bits(bytes.data() + 16, data - 16));
  return bytes;
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
  Expected<PackageReader> reader = Error(ErrorCode::corrupt, "");
  for (std::uint32_t version : {k_package_oldest_version - 1, k_package_version + 1}) {
    store_le<std::uint32_t>(other.data() + 4, version);
    reader = PackageReader::open(other);
    ASSERT_FALSE(reader);
    EXPECT_NE(reader.error().message.find("format version " + std::to_string(version) +
                                          "; this jitcache reads 2 to 3"),
              std::string::npos)
        << reader.error().message;
  }
  other = bytes;
  // Entries of another entry format: the header says so (and is checksummed).
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

TEST(PackageFormatTest, RecordsAreReadByNameAndInOrderBesideTheEntries) {
  test::TempDir dir;
  std::vector<PackageRecord> records = records_for(40, 100);
  records.push_back({Digest::of("an empty record"), ""});
  // A record named like an entry's key: the two domains never meet.
  const Key shared = key_for("sm_90", 3);
  records.push_back({shared.digest, "the record, not the entry"});
  const std::string bytes =
      make_package_with(dir.path(), "sm_90", entries_for("sm_90", 9), records);
  auto reader = PackageReader::open(bytes);
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_EQ(reader->provenance().package_version, k_package_version);
  EXPECT_EQ(reader->provenance().records, records.size());
  EXPECT_EQ(reader->record_count(), records.size());
  EXPECT_EQ(reader->size(), 9u);
  EXPECT_EQ(served_intact(bytes, "sm_90", 9), 9);
  for (const PackageRecord& record : records) {
    auto read = reader->read_record(record.name);
    ASSERT_TRUE(read) << read.error().message;
    ASSERT_TRUE(*read) << record.name.hex();
    EXPECT_EQ(**read, record.bytes);
  }
  EXPECT_EQ(view_entry(shared.digest, *reader->find(shared.digest)).value().key_fields,
            shared.stored_fields);
  EXPECT_FALSE(reader->read_record(Digest::of("never written")).value());
  EXPECT_FALSE(reader->read_record(key_for("sm_90", 4).digest).value()); // an entry's key
  std::sort(records.begin(), records.end(),
            [](const PackageRecord& a, const PackageRecord& b) { return a.name < b.name; });
  for (std::size_t i = 0; i < reader->record_count(); ++i) {
    auto at = reader->read_record_at(i);
    ASSERT_TRUE(at) << at.error().message;
    EXPECT_EQ(at->first, records[i].name) << i;
    EXPECT_EQ(at->second, records[i].bytes) << i;
  }
  // At any alignment, as entries.
  const std::string shifted = "xyz" + bytes;
  auto moved = PackageReader::open(std::string_view(shifted).substr(3));
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->read_record(records[7].name).value(), records[7].bytes);
}

// A package of records alone is a package: what a manifest of entries installed elsewhere (in
// another package, or imported into the user tier) would be.
TEST(PackageFormatTest, APackageMayHoldRecordsAndNoEntries) {
  test::TempDir dir;
  const std::vector<PackageRecord> records = records_for(3);
  const std::string bytes = make_package_with(dir.path(), "sm_80", {}, records);
  auto reader = PackageReader::open(bytes);
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_EQ(reader->size(), 0u);
  EXPECT_EQ(reader->record_count(), 3u);
  EXPECT_EQ(records_intact(bytes, accepted(records)), 3);
  // And an empty package has no records.
  auto empty = PackageReader::open(make_package(dir.path(), "sm_80", 0));
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->record_count(), 0u);
  EXPECT_FALSE(empty->read_record(records[0].name).value());
}

TEST(PackageFormatTest, WriterRefusesARecordNameGivenTwiceAndTooManyRecords) {
  test::TempDir dir;
  const fs::path file = dir.path() / "p.jcpkg";
  std::vector<PackageRecord> records = records_for(3);
  records.push_back({records[1].name, "another"});
  auto twice = write_package(file, target("sm_80"), entries_for("sm_80", 2), records);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(twice.error().message.find("record " + records[1].name.hex() + " given twice"),
            std::string::npos)
      << twice.error().message;
  auto many = write_package(file, target("sm_80"), {},
                            std::vector<PackageRecord>(k_package_max_records + 1));
  ASSERT_FALSE(many);
  EXPECT_EQ(many.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(many.error().message.find("at most " + std::to_string(k_package_max_records)),
            std::string::npos)
      << many.error().message;
  EXPECT_FALSE(fs::exists(file));
}

// Packages installed before records came (version 2) keep working after an upgrade: read, their
// entries served, no records. The version field is outside the checksum, but no package is
// misread when it is wrong: each version's header sizes its data offset differently.
TEST(PackageFormatTest, ReadsVersion2PackagesWithoutRecords) {
  test::TempDir dir;
  const std::string bytes = v2_package(target("sm_80"), entries_for("sm_80", 6));
  auto reader = PackageReader::open(bytes);
  ASSERT_TRUE(reader) << reader.error().message;
  const Provenance& p = reader->provenance();
  EXPECT_EQ(p.package_version, 2u);
  EXPECT_EQ(p.jitcache_version, "0.9.0");
  EXPECT_EQ(p.created, 1700000000);
  EXPECT_EQ(p.target, target("sm_80"));
  EXPECT_EQ(p.entries, 6u);
  EXPECT_EQ(p.records, 0u);
  EXPECT_EQ(p.bytes, bytes.size());
  EXPECT_EQ(reader->record_count(), 0u);
  EXPECT_FALSE(reader->read_record(Digest::of("record name 0")).value());
  EXPECT_EQ(served_intact(bytes, "sm_80", 6), 6);
  // Through the system tier, from a file.
  const fs::path file = dir.path() / "cuda-sm_80.jcpkg";
  write_file(file, bytes);
  auto store = PackageStore::open_system({file}, false);
  ASSERT_EQ(store->packages().size(), 1u);
  auto got = store->get(key_for("sm_80", 5).digest);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->payload.substr(0, 5), "sm_80");
  EXPECT_FALSE(store->record("cuda", Digest::of("record name 0")));
  // A version field rewritten either way is refused, never read with the other layout.
  std::string as_v3 = bytes;
  store_le<std::uint32_t>(as_v3.data() + 4, 3);
  EXPECT_FALSE(PackageReader::open(as_v3));
  std::string as_v2 =
      make_package_with(dir.path(), "sm_80", entries_for("sm_80", 2), records_for(2));
  store_le<std::uint32_t>(as_v2.data() + 4, 2);
  EXPECT_FALSE(PackageReader::open(as_v2));
}

class PackageStoreTest : public testing::Test {
protected:
  test::TempDir m_dir;
};

TEST_F(PackageStoreTest, SystemTierServesCopiesAndIsReadOnly) {
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
    // Copied out of the mapping before it is verified: the file can change under its map, and
    // what was verified must be what is used.
    EXPECT_TRUE(view.payload.data() + view.payload.size() <= begin ||
                view.payload.data() >= begin + size);
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

// Records of two packages: the first in lookup order holding a name wins; a package whose
// record is damaged is skipped with one warning naming it (the next one's record is used); only
// the packages serving the backend asked for are asked.
TEST_F(PackageStoreTest, RecordsComeFromTheFirstPackageHoldingThemAndDamageIsSkipped) {
  const fs::path a = m_dir.path() / "a.jcpkg", b = m_dir.path() / "b.jcpkg";
  const Digest both = Digest::of("in both"), only_b = Digest::of("only in b"),
               damaged = Digest::of("damaged in a");
  ASSERT_TRUE(write_package(a, target("sm_80"), entries_for("sm_80", 1),
                            {{both, "A's"}, {damaged, "A's damaged one"}}));
  ASSERT_TRUE(write_package(b, target("sm_90"), {},
                            {{both, "B's"}, {only_b, "B's own"}, {damaged, "B's intact one"}}));
  std::string bytes = read_file(a);
  const std::size_t at = bytes.find("A's damaged one");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 4] ^= 1;
  write_file(a, bytes);
  auto store = PackageStore::open_system({m_dir.path()}, false);
  ASSERT_EQ(store->packages().size(), 2u);
  testing::internal::CaptureStderr();
  EXPECT_EQ(store->record("cuda", both), "A's");
  EXPECT_EQ(store->record("cuda", only_b), "B's own");
  EXPECT_EQ(store->record("cuda", damaged), "B's intact one");
  EXPECT_EQ(store->record("cuda", damaged), "B's intact one");
  EXPECT_FALSE(store->record("cuda", Digest::of("in neither")));
  EXPECT_FALSE(store->record("hip", both));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(a.string() + ": package record " + damaged.hex() + " fails its checksum"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find(a.string()), err.rfind(a.string())) << "one warning: " << err;
  EXPECT_EQ(store->corrupt_seen(), 0u); // records are not entries: counted by their consumer
  // The embedded tier serves them from linked bytes.
  const std::string linked = read_file(b); // linked bytes outlive the tier
  auto embedded = PackageStore::open_embedded({EmbeddedPackage{"b.jcpkg", linked}});
  EXPECT_EQ(embedded->record("cuda", both), "B's");
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

// jitcache_open with system_path NULL (or "") reads no package at all, as its header says: not
// the build's default folder (which an environment without JITCACHE_SYSTEM_PATH does read).
TEST(PackageConfigTest, CApiWithoutASystemPathReadsNoPackages) {
  for (const char* none : {static_cast<const char*>(nullptr), ""}) {
    jitcache_settings settings;
    jitcache_settings_init(&settings);
    jitcache_cache* cache = nullptr;
    ASSERT_EQ(jitcache_open(&settings, &cache), JITCACHE_OK);
    EXPECT_TRUE(cache->cache.config().system_path.empty()) << (none ? "\"\"" : "NULL");
    EXPECT_FALSE(cache->cache.config().system_path_default);
    jitcache_close(cache);
  }
  jitcache_settings settings;
  jitcache_settings_init(&settings);
  settings.system_path = "/a.jcpkg:/b";
  jitcache_cache* cache = nullptr;
  ASSERT_EQ(jitcache_open(&settings, &cache), JITCACHE_OK);
  EXPECT_EQ(cache->cache.config().system_path, (std::vector<fs::path>{"/a.jcpkg", "/b"}));
  jitcache_close(cache);
}

// How many pages of `mapping` are in memory (mincore): what reading it has cost, counted rather
// than timed. A sparse file's holes are not, until they are read.
long resident_pages(std::string_view mapping) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((mapping.size() + page - 1) / page);
  if (::mincore(const_cast<char*>(mapping.data()), mapping.size(), in.data()) != 0)
    return -1;
  return static_cast<long>(
      std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
}

// A header made to claim `count` entries (and `records` records) in a file of `total` bytes
// (sparse: its holes cost no disk), otherwise consistent: the data offset follows from the
// counts, as a reader checks.
fs::path claiming(const fs::path& dir, std::uint64_t count, std::uint64_t total,
                  std::uint64_t records = 0) {
  std::string bytes = make_package(dir, "sm_80", 0);
  const std::uint64_t provenance = load_le<std::uint32_t>(bytes.data() + 20);
  store_le<std::uint64_t>(bytes.data() + 24, count);
  store_le<std::uint64_t>(bytes.data() + 32, total);
  store_le<std::uint64_t>(bytes.data() + 40, k_package_header_size + provenance +
                                                 (count + records) * k_package_index_record);
  store_le<std::uint64_t>(bytes.data() + 48, records);
  const fs::path file = dir / "claims.jcpkg";
  write_file(file, bytes);
  fs::resize_file(file, total);
  return file;
}

// The pages of `file` in memory after opening it, and the error.
std::pair<long, std::string> open_counting_pages(const fs::path& file) {
  auto mapped = MappedFile::open(file);
  EXPECT_TRUE(mapped) << mapped.error().message;
  if (!mapped)
    return {0, ""};
  auto reader = PackageReader::open((*mapped)->bytes());
  return {resident_pages((*mapped)->bytes()), reader ? std::string() : reader.error().message};
}

// A header claiming an index of a gigabyte (every process reading the package used to hash it
// all before comparing the checksum: seconds, and the whole file resident) is refused from the
// header alone: the entry count is bounded, and every entry takes at least an entry header.
TEST(PackageFormatTest, AHeaderClaimingAHugeIndexIsRefusedBeforeItIsRead) {
  test::TempDir dir;
  const std::uint64_t gib = std::uint64_t(1) << 30;
  const auto [taken, error] = open_counting_pages(claiming(dir.path(), gib / 48 - 64, gib));
  EXPECT_NE(error.find("entries"), std::string::npos) << error;
  EXPECT_NE(error.find("at most"), std::string::npos) << error;
  EXPECT_LT(taken, 64) << "pages read for a refused header: " << error;

  // The same for records: a count beyond the bound, and the most a package may hold in a file
  // too small for them.
  const auto [taken_records, error_records] =
      open_counting_pages(claiming(dir.path(), 0, gib, gib / 48 - 64));
  EXPECT_NE(error_records.find("records; a package holds at most"), std::string::npos)
      << error_records;
  EXPECT_LT(taken_records, 64) << "pages read for a refused header: " << error_records;
  const auto [taken_few, error_few] = open_counting_pages(claiming(
      dir.path(), 0, k_package_max_records * k_package_index_record + 4096, k_package_max_records));
  EXPECT_NE(error_few.find("too small"), std::string::npos) << error_few;
  EXPECT_LT(taken_few, 64) << "pages read for a refused header: " << error_few;

  // As many entries as a package may hold, in a file too small for that many entries.
  const std::uint64_t count = k_package_max_entries;
  const auto [taken_small, error_small] =
      open_counting_pages(claiming(dir.path(), count, count * k_package_index_record + 4096));
  EXPECT_NE(error_small.find("too small"), std::string::npos) << error_small;
  EXPECT_LT(taken_small, 64) << "pages read for a refused header: " << error_small;
}

// `count` entries of distinct binaries (the i-th says it is the i-th), for sm_90.
std::vector<PackageEntry> numbered_entries(int count, std::size_t payload_bytes) {
  std::vector<PackageEntry> entries;
  for (int i = 0; i < count; ++i) {
    const Key key = key_for("sm_90", i);
    std::string payload = "binary " + std::to_string(i) + ":";
    while (payload.size() < payload_bytes)
      payload += std::to_string(i * 7919 + static_cast<int>(payload.size()));
    Entry entry("cuda", payload, "meta", 1000 + i);
    entry.key_fields = key.stored_fields;
    entries.push_back({key.digest, encode_entry(key.digest, entry)});
  }
  return entries;
}

std::string payload_of(const PackageEntry& entry) {
  auto view = view_entry(entry.key, entry.bytes);
  return view ? std::string(view->payload) : std::string();
}

// Writes `bytes` over `file` in place, as cp does: truncated, then written from the start.
void copy_over(const fs::path& file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Writes over `live` (a copy of `v1`, mapped by the caller) in the `way` (0 to 3) a package is
// replaced while mapped: truncated (reading past the new end raises SIGBUS), copied over whole
// by `v2`, copied over partly (cp caught half way), or a range rewritten in place with `v2`'s
// bytes, the size unchanged; where and how much drawn from `random`.
void replace_under_map(std::mt19937_64& random, int way, const fs::path& live,
                       const std::string& v1, const std::string& v2) {
  switch (way) {
  case 0:
    fs::resize_file(live, random() % v1.size());
    break;
  case 1:
    copy_over(live, v2);
    break;
  case 2:
    copy_over(live, std::string_view(v2).substr(0, random() % v2.size()));
    break;
  default: {
    const std::size_t at = random() % v1.size();
    const std::size_t length = std::min<std::size_t>(random() % 4096, v1.size() - at);
    std::fstream out(live, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(at));
    out.write(v2.data() + at, static_cast<std::streamsize>(length));
  }
  }
}

// A package file replaced while a process has it mapped, at a random moment (after it is mapped
// and before it is opened, or between opening and the lookups) and in a random way: truncated,
// copied over whole by another version (with a different layout), copied over partly (cp caught
// half way), or a range of it rewritten with the other version's bytes. Each trial, seeded, runs
// every lookup and the listing: every key is the right binary or a miss; never a crash (the
// trials run in a child: a SIGBUS outside the fault guard kills it), never a wrong binary.
TEST(PackageDamageTest, APackageReplacedWhileMappedIsAMissNeverACrashNorAWrongBinary) {
  test::TempDir dir;
  const std::vector<PackageEntry> v1_entries = numbered_entries(40, 700);
  const std::vector<PackageEntry> v2_entries = numbered_entries(64, 1300);
  std::map<Digest, std::set<std::string>> right; // what each key may be served as
  for (const auto* list : {&v1_entries, &v2_entries})
    for (const PackageEntry& entry : *list)
      right[entry.key].insert(payload_of(entry));
  ASSERT_TRUE(write_package(dir.path() / "v1.jcpkg", target("sm_90"), v1_entries));
  ASSERT_TRUE(write_package(dir.path() / "v2.jcpkg", target("sm_90"), v2_entries));
  const std::string v1 = read_file(dir.path() / "v1.jcpkg");
  const std::string v2 = read_file(dir.path() / "v2.jcpkg");
  const fs::path live = dir.path() / "live.jcpkg";
  const int trials = test::hostile_trials(300);
  const std::uint64_t seed = 2027;
  std::printf("seed %llu, %d trials\n", static_cast<unsigned long long>(seed), trials);
  test::ChildProcess child([&] {
    int refused = 0, served = 0, missed = 0, wrong = 0;
    for (int trial = 0; trial < trials; ++trial) {
      std::mt19937_64 random(seed + static_cast<std::uint64_t>(trial));
      copy_over(live, v1);
      auto file = MappedFile::open(live);
      if (!file)
        return 2;
      const int way = static_cast<int>(random() % 4);
      const auto replace = [&] { replace_under_map(random, way, live, v1, v2); };
      const bool before_open = random() % 2 == 0;
      if (before_open)
        replace();
      auto reader = PackageReader::open((*file)->bytes());
      if (!reader) {
        ++refused;
        continue;
      }
      PackageStore store("system", {OpenPackage{live.string(), std::move(*reader), *file}});
      if (!before_open)
        replace();
      for (const auto& [key, payloads] : right) {
        auto got = store.get(key);
        if (!got || !*got) {
          ++missed;
          continue;
        }
        ++served;
        if (!payloads.count((*got)->payload)) {
          ++wrong;
          std::fprintf(stderr, "trial %d: a wrong binary for %s\n", trial, key.hex().c_str());
        }
      }
      static_cast<void>(store.for_each([](const Store::Item&) {}));
    }
    test::ChildProcess::tell_parent("refused " + std::to_string(refused) + ", served " +
                                    std::to_string(served) + ", missed " + std::to_string(missed) +
                                    ", wrong " + std::to_string(wrong));
    return wrong == 0 ? 0 : 3;
  });
  // Waited for first: its warnings fill its stderr, which wait() drains.
  const int status = child.wait();
  if (const auto summary = child.next_message())
    std::printf("%s\n", summary->c_str());
  EXPECT_EQ(status, 0) << "(128 + 7: SIGBUS) seed " << seed << ": "
                       << child.err().substr(child.err().size() -
                                             std::min<std::size_t>(child.err().size(), 2000));
}

// Headers made to claim more than their file holds, in every field that sizes a read: the entry
// count, the record count, the provenance length, the data offset, the total size, an entry's or
// a record's offset and length in its index; half the trials keep the claims consistent with each
// other and make the file as large as they say (sparse), so that only the bounds a reader sets
// stand between it and gigabytes. Every trial is refused or served right, and opening reads no more
// pages than the largest index and provenance a package may have (pages in memory counted, not
// time).
TEST(PackageDamageTest, AHeaderClaimingMoreThanItsFileIsRefusedWithBoundedReading) {
  test::TempDir dir;
  const std::vector<PackageEntry> entries = numbered_entries(12, 300);
  const std::vector<PackageRecord> records = records_for(6, 120);
  ASSERT_TRUE(write_package(dir.path() / "v1.jcpkg", target("sm_90"), entries, records));
  const std::string pristine = read_file(dir.path() / "v1.jcpkg");
  const fs::path file = dir.path() / "claims.jcpkg";
  // The largest indexes and provenance, this file's own pages, and the kernel's read-ahead
  // around the pages a reader touches (up to some MiB of a sparse file's holes).
  const long bound =
      static_cast<long>(((k_package_max_entries + k_package_max_records) * k_package_index_record +
                         k_package_max_provenance + pristine.size() + (std::size_t(16) << 20)) /
                        4096);
  const int trials = test::hostile_trials(300);
  const std::uint64_t seed = 9027;
  std::printf("seed %llu, %d trials\n", static_cast<unsigned long long>(seed), trials);
  int refused = 0, opened = 0;
  long most = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::mt19937_64 random(seed + static_cast<std::uint64_t>(trial));
    std::string bytes = pristine;
    const std::uint64_t provenance = load_le<std::uint32_t>(bytes.data() + 20);
    // A claim: up to 2^40, or near 2^64, or a little more than the file.
    const auto claim = [&] {
      switch (random() % 3) {
      case 0:
        return random() % (std::uint64_t(1) << 40);
      case 1:
        return ~std::uint64_t(0) - random() % 4096;
      default:
        return bytes.size() + random() % 65536;
      }
    };
    std::uint64_t total = bytes.size();
    if (random() % 2 == 0) { // consistent claims over a sparse file that large
      const std::uint64_t count = random() % (2 * k_package_max_entries);
      const std::uint64_t named = random() % 2 ? random() % (2 * k_package_max_records) : 6;
      const std::uint64_t data = k_package_header_size + provenance + (count + named) * 48;
      total = data + random() % (std::uint64_t(1) << 33);
      store_le<std::uint64_t>(bytes.data() + 24, count);
      store_le<std::uint64_t>(bytes.data() + 32, total);
      store_le<std::uint64_t>(bytes.data() + 40, data);
      store_le<std::uint64_t>(bytes.data() + 48, named);
    } else {
      switch (random() % 7) {
      case 0:
        store_le<std::uint64_t>(bytes.data() + 24, claim());
        break;
      case 1:
        store_le<std::uint32_t>(bytes.data() + 20, static_cast<std::uint32_t>(claim()));
        break;
      case 2:
        store_le<std::uint64_t>(bytes.data() + 40, claim());
        break;
      case 3:
        store_le<std::uint64_t>(bytes.data() + 32, claim());
        break;
      case 4:
        store_le<std::uint64_t>(bytes.data() + 48, claim());
        break;
      default: { // an entry's or a record's offset or length, the checksum made right
        const std::size_t record =
            k_package_header_size + provenance +
            (random() % (entries.size() + records.size())) * k_package_index_record;
        store_le<std::uint64_t>(bytes.data() + record + (random() % 2 ? 32 : 40), claim());
        const std::uint64_t data = load_le<std::uint64_t>(bytes.data() + 40);
        store_le<std::uint64_t>(bytes.data() + 8, XXH3_64bits(bytes.data() + 16, data - 16));
      }
      }
      if (random() % 2 == 0) // the file as large as the header says, when that can be
        total = std::min<std::uint64_t>(load_le<std::uint64_t>(bytes.data() + 32), std::uint64_t(1)
                                                                                       << 34);
    }
    write_file(file, bytes);
    fs::resize_file(file, std::max<std::uint64_t>(total, bytes.size()));
    auto mapped = MappedFile::open(file);
    ASSERT_TRUE(mapped) << mapped.error().message;
    auto reader = PackageReader::open((*mapped)->bytes());
    const long taken = resident_pages((*mapped)->bytes());
    most = std::max(most, taken);
    EXPECT_LE(taken, bound) << "trial " << trial << " (seed " << seed << ")";
    if (!reader) {
      ++refused;
      EXPECT_FALSE(reader.error().message.empty());
      continue;
    }
    ++opened;
    PackageStore store("system", {OpenPackage{file.string(), std::move(*reader), *mapped}});
    for (const PackageEntry& entry : entries) {
      if (auto got = store.get(entry.key); got && *got) {
        EXPECT_EQ((*got)->payload, payload_of(entry)) << "trial " << trial;
      }
    }
    for (const PackageRecord& record : records) {
      if (auto got = store.record("cuda", record.name)) {
        EXPECT_EQ(*got, record.bytes) << "trial " << trial;
      }
    }
  }
  std::printf("refused %d, opened %d, most pages read by one open: %ld (bound %ld)\n", refused,
              opened, most, bound);
}

// A package of entries and records damaged at random: 1 to 4 bytes anywhere set to other
// values. Each trial (seeded; the seed printed) is refused, or each entry and each record is read
// intact or is an error or a miss, by the reader and through the tier: never a crash, never a
// wrong binary or record; and no damage goes unnoticed (every byte is under some checksum).
TEST(PackageDamageTest, RandomDamageToAPackageWithRecordsIsRefusedOrAMissNeverAWrongRecord) {
  test::TempDir dir;
  const std::vector<PackageRecord> records = records_for(24, 160);
  const std::string pristine =
      make_package_with(dir.path(), "sm_90", entries_for("sm_90", 6, 64), records);
  const auto right = accepted(records);
  const int trials = test::hostile_trials(400);
  const std::uint64_t seed = 3031;
  std::printf("seed %llu, %d trials\n", static_cast<unsigned long long>(seed), trials);
  int refused = 0, records_hit = 0, entries_hit = 0, unnoticed = 0;
  testing::internal::CaptureStderr(); // the tier's one warning
  for (int trial = 0; trial < trials; ++trial) {
    std::mt19937_64 random(seed + static_cast<std::uint64_t>(trial));
    std::string bytes = pristine;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = random() % bytes.size();
      bytes[at] = static_cast<char>(bytes[at] ^ static_cast<char>(1 + random() % 255));
    }
    const int entries = served_intact(bytes, "sm_90", 6);
    const int intact = records_intact(bytes, right);
    if (intact < 0) {
      ++refused;
      continue;
    }
    records_hit += intact < 24;
    entries_hit += entries < 6;
    unnoticed += intact == 24 && entries == 6 && bytes != pristine;
    PackageStore store("embedded",
                       {OpenPackage{"damaged.jcpkg", PackageReader::open(bytes).value(), nullptr}});
    for (const PackageRecord& record : records) {
      if (auto got = store.record("cuda", record.name)) {
        EXPECT_EQ(*got, record.bytes) << "trial " << trial;
      }
    }
  }
  testing::internal::GetCapturedStderr();
  std::printf("refused %d, records damaged %d, entries damaged %d, unnoticed %d\n", refused,
              records_hit, entries_hit, unnoticed);
  EXPECT_EQ(unnoticed, 0) << "seed " << seed;
  EXPECT_GT(refused, 0);
  EXPECT_GT(records_hit, 0);
  EXPECT_GT(entries_hit, 0);
}

// A package with records replaced while a process has it mapped, as the test above does for
// entries: every record read by name (through the tier) and by position is one of the versions
// written under its name, or a miss; never a crash, never a wrong record. The two versions have
// the same layout (as a package rebuilt with other kernels may) and half their names in common:
// an index rewritten under its map points at the other version's record of another name, whose
// frame is intact.
TEST(PackageDamageTest, RecordsOfAPackageReplacedWhileMappedAreAMissNeverACrashNorWrong) {
  test::TempDir dir;
  const std::vector<PackageRecord> v1_records = records_for(40, 200, "v1");
  const std::vector<PackageRecord> v2_records = records_for(40, 200, "v2", 20);
  std::map<Digest, std::set<std::string>> right = accepted(v1_records);
  for (const PackageRecord& record : v2_records)
    right[record.name].insert(record.bytes);
  ASSERT_TRUE(write_package(dir.path() / "v1.jcpkg", target("sm_90"), numbered_entries(40, 700),
                            v1_records));
  ASSERT_TRUE(write_package(dir.path() / "v2.jcpkg", target("sm_90"), numbered_entries(40, 700),
                            v2_records));
  const std::string v1 = read_file(dir.path() / "v1.jcpkg");
  const std::string v2 = read_file(dir.path() / "v2.jcpkg");
  ASSERT_EQ(v1.size(), v2.size());
  const fs::path live = dir.path() / "live.jcpkg";
  const int trials = test::hostile_trials(300);
  const std::uint64_t seed = 2028;
  std::printf("seed %llu, %d trials\n", static_cast<unsigned long long>(seed), trials);
  test::ChildProcess child([&] {
    int refused = 0, served = 0, missed = 0, wrong = 0;
    for (int trial = 0; trial < trials; ++trial) {
      std::mt19937_64 random(seed + static_cast<std::uint64_t>(trial));
      copy_over(live, v1);
      auto file = MappedFile::open(live);
      if (!file)
        return 2;
      const int way = static_cast<int>(random() % 4);
      const bool before_open = random() % 2 == 0;
      if (before_open)
        replace_under_map(random, way, live, v1, v2);
      auto reader = PackageReader::open((*file)->bytes());
      if (!reader) {
        ++refused;
        continue;
      }
      PackageStore store("system", {OpenPackage{live.string(), std::move(*reader), *file}});
      if (!before_open)
        replace_under_map(random, way, live, v1, v2);
      const auto check = [&](const Digest& name, const std::string& bytes) {
        const auto it = right.find(name);
        if (it == right.end() || !it->second.count(bytes)) {
          ++wrong;
          std::fprintf(stderr, "trial %d: a wrong record for %s\n", trial, name.hex().c_str());
        }
      };
      for (const auto& [name, versions] : right) {
        auto got = store.record("cuda", name);
        if (!got) {
          ++missed;
          continue;
        }
        ++served;
        check(name, *got);
      }
      const PackageReader& opened = store.packages()[0].reader;
      for (std::size_t i = 0; i < opened.record_count(); ++i)
        if (auto at = opened.read_record_at(i))
          check(at->first, at->second);
    }
    test::ChildProcess::tell_parent("refused " + std::to_string(refused) + ", records served " +
                                    std::to_string(served) + ", missed " + std::to_string(missed) +
                                    ", wrong " + std::to_string(wrong));
    return wrong == 0 ? 0 : 3;
  });
  const int status = child.wait(); // first: its warnings fill its stderr, which wait() drains
  if (const auto summary = child.next_message())
    std::printf("%s\n", summary->c_str());
  EXPECT_EQ(status, 0) << "(128 + 7: SIGBUS) seed " << seed << ": "
                       << child.err().substr(child.err().size() -
                                             std::min<std::size_t>(child.err().size(), 2000));
}

} // namespace
} // namespace jitcache::detail
