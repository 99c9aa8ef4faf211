// libFuzzer harness over the package reader (core/tiers/packages/package_format) and the entry
// codec it hands entries to (issue 13): what a system or embedded package can hold is any bytes at
// all. Each input is read as it is, and again with its checksums made right (the header's over the
// provenance and the indexes, each entry's over its bytes, each record frame's over its name and
// bytes), so that mutations reach the parsing behind them. Nothing may crash, read outside the
// input (AddressSanitizer) or be undefined (UndefinedBehaviorSanitizer); an entry that verifies
// must lie inside the input and be the one the index finds under its key, and a record read by
// position must be the one read under its name. ci/fuzz.sh builds it with clang and runs it for a
// bounded time.
#include "core/support/byte_io.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "core/tiers/packages/package_target.hpp"

#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace {

using namespace jitcache;
using jitcache::detail::encode_entry;
using jitcache::detail::verify_entry;
using jitcache::detail::view_entry;
using namespace jitcache::detail;

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "package_reader_fuzz: %s\n", what);
  __builtin_trap();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void exercise(std::string_view bytes) {
  auto reader = PackageReader::open(bytes);
  if (!reader)
    return;
  const Provenance& p = reader->provenance();
  if (p.target.backend.size() + p.target.label.size() > bytes.size())
    broken("provenance longer than the package");
  static_cast<void>(package_file_name(p.target));
  for (std::size_t i = 0; i < reader->size(); ++i) {
    const auto [key, entry] = reader->at(i);
    if (!inside(entry, bytes))
      broken("an entry outside the package");
    const auto found = reader->find(key);
    if (!found || found->data() != entry.data() || found->size() != entry.size())
      broken("the index does not find the entry under its own key");
    auto view = view_entry(key, entry);
    if (!view)
      continue;
    if (!inside(view->payload, entry) || !inside(view->key_fields, entry) ||
        !inside(view->metadata, entry))
      broken("a verified entry's parts lie outside it");
    if (!verify_entry(key, entry))
      broken("an entry that views does not verify");
  }
  static_cast<void>(reader->find(Digest{}));
  for (std::size_t i = 0; i < reader->record_count(); ++i) {
    auto record = reader->read_record_at(i);
    if (!record)
      continue;
    if (record->second.size() > bytes.size())
      broken("a record longer than the package");
    auto named = reader->read_record(record->first);
    if (!named || !*named || **named != record->second)
      broken("the record index does not find the record under its own name");
  }
  static_cast<void>(reader->read_record(Digest{}));
}

// The input with every checksum it carries recomputed, where its lengths let one be found.
std::string with_checksums_fixed(std::string bytes) {
  if (bytes.size() < k_package_v2_header_size)
    return bytes;
  const bool v2 = load_le<std::uint32_t>(bytes.data() + 4) == 2;
  if (!v2 && bytes.size() < k_package_header_size)
    return bytes;
  const std::uint64_t data = load_le<std::uint64_t>(bytes.data() + 40);
  const std::uint64_t count = load_le<std::uint64_t>(bytes.data() + 24);
  const std::uint64_t records = v2 ? 0 : load_le<std::uint64_t>(bytes.data() + 48);
  const std::uint64_t index = (v2 ? k_package_v2_header_size : k_package_header_size) +
                              load_le<std::uint32_t>(bytes.data() + 20);
  // Entries' checksums lie at 8 over the bytes from 16; records' at 0 over the bytes from 8.
  for (std::uint64_t i = 0; i < count + records && i < 4096; ++i) {
    const std::uint64_t at = index + i * k_package_index_record;
    if (at + k_package_index_record > bytes.size() || at + k_package_index_record > data)
      break;
    const std::uint64_t offset = load_le<std::uint64_t>(bytes.data() + at + 32);
    const std::uint64_t length = load_le<std::uint64_t>(bytes.data() + at + 40);
    const std::uint64_t sum = i < count ? 8 : 0;
    if (offset >= data && length >= 16 && offset <= bytes.size() && length <= bytes.size() - offset)
      store_le<std::uint64_t>(bytes.data() + offset + sum,
                              XXH3_64bits(bytes.data() + offset + sum + 8, length - sum - 8));
  }
  if (data >= 16 && data <= bytes.size())
    store_le<std::uint64_t>(bytes.data() + 8, XXH3_64bits(bytes.data() + 16, data - 16));
  return bytes;
}

Digest digest_of(int i) {
  Digest d{};
  d.bytes[0] = static_cast<std::uint8_t>(i);
  d.bytes[31] = static_cast<std::uint8_t>(0xA5 ^ i);
  return d;
}

// Valid packages to start from, written into an empty corpus folder.
void write_seeds(const std::filesystem::path& corpus) {
  std::error_code ec;
  std::filesystem::create_directories(corpus, ec);
  if (!std::filesystem::is_empty(corpus, ec) || ec)
    return;
  for (int entries : {0, 1, 3, 17}) {
    // Records too: none, some, and a package of records alone.
    std::vector<PackageRecord> records;
    for (int i = 0; i < (entries == 1 ? 0 : 5 - entries % 5); ++i)
      records.push_back({Digest::of("record " + std::to_string(i)),
                         std::string(static_cast<std::size_t>(3 * i), static_cast<char>('r' + i))});
    PackageTarget target;
    target.backend = "cuda";
    target.label = "sm_90";
    target.identity = "arch=sm_90";
    std::vector<PackageEntry> list;
    for (int i = 0; i < entries; ++i) {
      Entry entry;
      entry.backend = "cuda";
      entry.metadata = std::string(static_cast<std::size_t>(i % 5), 'm');
      entry.payload = std::string(static_cast<std::size_t>(16 + 7 * i), static_cast<char>(i));
      list.push_back({digest_of(i), encode_entry(digest_of(i), entry)});
    }
    static_cast<void>(write_package(corpus / ("seed-" + std::to_string(entries) + ".jcpkg"), target,
                                    std::move(list), std::move(records)));
  }
}

} // namespace

// The first argument that is not a flag is the corpus folder: when empty, it gets the seeds.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i)
    if ((*argv)[i][0] != '-') {
      write_seeds((*argv)[i]);
      break;
    }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  exercise(input);
  exercise(with_checksums_fixed(input));
  return 0;
}
