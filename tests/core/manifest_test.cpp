// Manifests: a request's key taken from the user tier, without reading a header, exactly while
// the files it was built from are unchanged.
#include "core/engine/cache_core.hpp"
#include "core/engine/tier_set.hpp"
#include "core/key/known_parts.hpp"
#include "core/key/manifest.hpp"
#include "core/key/portable_manifest.hpp"
#include "core/support/log.hpp"
#include "core/support/sealed_bytes.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "core/tiers/packages/package_target.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "core/tiers/user/user_store.hpp"
#include "tests/support/faulty_user_tier.hpp"
#include "tests/support/files.hpp"
#include "tests/support/stamp_clock.hpp"
#include "tests/support/temp_dir.hpp"

#include <jitcache/cache.hpp>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace jitcache {

using detail::add_source_fields;
using detail::Dependencies;
using detail::LmdbStore;
using detail::open_user_store;
using detail::SourceInputs;
namespace {
using test::write_file;

namespace fs = std::filesystem;

class ManifestTest : public ::testing::Test {
protected:
  // Made first: the stamp of the directory above an absent candidate (first/a.h) then settles
  // with the others.
  void SetUp() override {
    fs::create_directories(dir.path() / "cache");
    fs::create_directories(dir.path() / "first");
  }
  Config config(std::map<std::string, std::string> extra = {}) const {
    extra.emplace("JITCACHE_DIR", (dir.path() / "cache").string());
    return Config::from_variables(extra);
  }
  // The key of `source` with include directories first/ then second/, through a manifest, in a
  // Cache of its own (as a new process would: the record comes from the user tier). Counts the
  // key builds.
  detail::GuardedKey key(const std::string& source, const Config& with) {
    Cache cache(with);
    detail::core_of(cache).set_stamp_clock(clock.clock());
    return *detail::manifest_key(detail::core_of(cache), "opencl",
                                 detail::record_name("test key", {source}), build(source));
  }
  // Builds the key of `source` from the files, counted in `builds`.
  detail::PendingKey::Build build(const std::string& source) {
    return [this, source]() -> Expected<std::pair<Key, Dependencies>> {
      ++builds;
      const std::vector<fs::path> dirs{dir.path() / "first", dir.path() / "second"};
      KeyBuilder builder("opencl");
      auto deps = add_source_fields(builder, SourceInputs{source, {}, {}, dirs});
      return std::pair<Key, Dependencies>{builder.finish(), deps};
    };
  }
  detail::GuardedKey key(const std::string& source) { return key(source, config()); }
  // Files written within two seconds cannot vouch for their content (too_recent): the clock
  // that says so is moved past them instead of waiting.
  void let_stamps_settle() { clock.settle(); }

  test::FakeStampClock clock;
  test::TempDir dir;
  int builds = 0;
};

// A key built from no file costs less to build than to recall: nothing is remembered for it.
TEST_F(ManifestTest, AKeyBuiltFromNoFileIsNotRemembered) {
  const std::string source = "kernel void k() {}\n";
  let_stamps_settle();
  const auto first = key(source);
  const auto second = key(source);
  EXPECT_FALSE(first.recalled);
  EXPECT_FALSE(second.recalled);
  EXPECT_EQ(builds, 2);
  EXPECT_EQ(first.key.digest, second.key.digest);
}

// Every spelling that can name a file makes a request one whose key may be built from files.
TEST(MayReadFiles, EverySpellingOfAnIncludeCounts) {
  for (const char* named : {"#include <a.h>", "#  include \"a.h\"", "%:include <a.h>",
                            "#import <a.h>", "-include a.h", "__has_include(<a.h>)",
                            "#inc\\\nlude <a.h>", "#inc\\\r\nlude <a.h>", "#inc?\?/\nlude <a.h>"})
    EXPECT_TRUE(detail::may_read_files(named)) << named;
  EXPECT_FALSE(detail::may_read_files("kernel void k(global int* x) { *x = 1; }"));
}

TEST_F(ManifestTest, ARememberedKeyIsRecalledUntilAFileItWasBuiltFromChanges) {
  const std::string source = "#include <a.h>\n#include \"missing.h\"\nkernel void k() {}\n";
  write_file(dir.path() / "second/a.h", "#include \"b.h\"\nint a;\n");
  write_file(dir.path() / "second/b.h", "int b;\n");
  let_stamps_settle();

  const auto built = key(source);
  EXPECT_FALSE(built.recalled);
  ASSERT_TRUE(built.guards);
  const auto recalled = key(source);
  EXPECT_TRUE(recalled.recalled) << "unchanged files: the key comes from the manifest";
  EXPECT_EQ(recalled.key.digest, built.key.digest);
  EXPECT_EQ(recalled.key.stored_fields, built.key.stored_fields);
  EXPECT_EQ(builds, 1);

  {
    SCOPED_TRACE("a header edited (same size)");
    clock.stop();
    write_file(dir.path() / "second/b.h", "int c;\n");
    const auto edited = key(source);
    EXPECT_FALSE(edited.recalled);
    EXPECT_NE(edited.key.digest, built.key.digest);
    EXPECT_FALSE(edited.guards) << "a file this recent cannot vouch for its content";
    EXPECT_FALSE(key(source).recalled) << "so it was not remembered";
  }
  // Each change is made to a remembered manifest (stamps settled, key built, recalled), and
  // must give another key, built from the files.
  const auto changes_the_key = [&](const char* what, const std::function<void()>& change) {
    SCOPED_TRACE(what);
    let_stamps_settle();
    const Digest before = key(source).key.digest;
    EXPECT_TRUE(key(source).recalled);
    change();
    const auto after = key(source);
    EXPECT_FALSE(after.recalled);
    EXPECT_NE(after.key.digest, before);
  };
  changes_the_key("a header created earlier in the include path shadows one",
                  [&] { write_file(dir.path() / "first/a.h", "int shadow;\n"); });
  changes_the_key("an include that resolved nowhere appears",
                  [&] { write_file(dir.path() / "second/missing.h", "int now_here;\n"); });
  changes_the_key("a header removed", [&] { fs::remove(dir.path() / "first/a.h"); });
  fs::create_directories(dir.path() / "elsewhere");
  fs::create_symlink(dir.path() / "elsewhere/a.h", dir.path() / "first/a.h");
  changes_the_key("a link to nothing earlier in the include path finds its target",
                  [&] { write_file(dir.path() / "elsewhere/a.h", "int linked;\n"); });
  EXPECT_FALSE(key(source + " ").recalled) << "another source is another request";
}

TEST_F(ManifestTest, APendingKeyOffersTheRememberedKeyAndProvesItOnAnotherThread) {
  std::string source;
  for (int i = 0; i < 120; ++i) {
    write_file(dir.path() / "second" / ("h" + std::to_string(i) + ".h"),
               "int h" + std::to_string(i) + ";\n");
    source += "#include <h" + std::to_string(i) + ".h>\n";
  }
  let_stamps_settle();
  const Digest name = detail::record_name("test key", {source});
  std::optional<Digest> guessed;
  const auto settle = [&] {
    Cache cache(config()); // as a new process: the record comes from the user tier
    detail::core_of(cache).set_stamp_clock(clock.clock());
    detail::PendingKey pending(detail::core_of(cache), "opencl", name, build(source), true);
    guessed.reset();
    if (const Key* guess = pending.guess())
      guessed = guess->digest;
    return *pending.settle();
  };
  const auto built = settle();
  EXPECT_FALSE(guessed) << "nothing remembered yet";
  EXPECT_FALSE(built.recalled);
  ASSERT_TRUE(built.guards);
  EXPECT_GT(built.guards->size(), 4096u) << "enough stamps to be checked on a thread";

  const auto recalled = settle();
  EXPECT_EQ(guessed, built.key.digest) << "offered before its stamps were checked";
  EXPECT_TRUE(recalled.recalled);
  EXPECT_EQ(recalled.key.digest, built.key.digest);
  EXPECT_EQ(recalled.key.stored_fields, built.key.stored_fields);
  EXPECT_EQ(builds, 1);

  {
    Cache cache(config());
    detail::PendingKey unsettled(detail::core_of(cache), "opencl", name, build(source), true);
    EXPECT_TRUE(unsettled.guess()) << "destroyed without settle(): waits for its check";
  }
  write_file(dir.path() / "second/h77.h", "int x77;\n"); // same size
  const auto edited = settle();
  EXPECT_EQ(guessed, built.key.digest) << "the guess is the remembered key, still";
  EXPECT_FALSE(edited.recalled) << "but the check found the edit";
  EXPECT_NE(edited.key.digest, built.key.digest);
  EXPECT_EQ(builds, 2);
}

// A package's portable manifest proven on a thread (a new machine: no manifest of its own yet)
// answers before this machine's manifest is made; that one is made on the same thread after the
// answer, waited for by a repeat of the request in the process (which then needs no proof) and
// by the flush, which remembers it for the next process. 8 processes at once on a new machine,
// then 30 in a row: each takes the packaged key, none builds it.
TEST_F(ManifestTest, APackagesManifestProvenOnAThreadIsThisMachinesAfterTheAnswer) {
  std::string source;
  for (int i = 0; i < 200; ++i) { // a manifest big enough to be proven on a thread
    write_file(dir.path() / "second" / ("header_with_a_long_name_" + std::to_string(i) + ".h"),
               "int h" + std::to_string(i) + ";\n");
    source += "#include <header_with_a_long_name_" + std::to_string(i) + ".h>\n";
  }
  let_stamps_settle();
  const Digest name = detail::record_name("test key", {source});
  const auto built = key(source); // the exporting machine remembers the key and its paths
  ASSERT_TRUE(built.guards);
  std::string manifest;
  {
    Cache cache(config());
    detail::core_of(cache).set_stamp_clock(clock.clock());
    std::string paths;
    ASSERT_TRUE(
        detail::core_of(cache).peek("opencl", detail::paths_name(name),
                                    [&](const detail::RecordView& r) { paths = r.payload; }));
    detail::InstalledFiles installed;
    auto made = detail::make_portable(detail::encode_key(built.key), paths, installed);
    ASSERT_TRUE(made);
    manifest = detail::encode_portable(*made);
  }
  ASSERT_GE(manifest.size(), 16384u) << "proven on a thread only from this size on";
  const fs::path packages = dir.path() / "packages";
  fs::create_directories(packages);
  ASSERT_TRUE(detail::write_package(packages / "test.jcpkg",
                                    detail::target_of("opencl", built.key.fields), {},
                                    {{name, manifest}}));

  const auto new_machine = [&](const fs::path& cache_dir) {
    return config(
        {{"JITCACHE_DIR", cache_dir.string()}, {"JITCACHE_SYSTEM_PATH", packages.string()}});
  };
  const fs::path fresh = dir.path() / "new machine";
  {
    Cache cache(new_machine(fresh));
    detail::CacheCore& core = detail::core_of(cache);
    core.set_stamp_clock(clock.clock());
    detail::PendingKey first(core, "opencl", name, build(source), true);
    ASSERT_TRUE(first.guess());
    const auto answered = *first.settle();
    EXPECT_TRUE(answered.recalled);
    EXPECT_EQ(answered.key.digest, built.key.digest);
    EXPECT_FALSE(answered.guards) << "answered before this machine's manifest is made";

    detail::PendingKey again(core, "opencl", name, build(source), true);
    const auto repeated = *again.settle();
    EXPECT_TRUE(repeated.recalled);
    EXPECT_EQ(repeated.key.digest, built.key.digest);
    ASSERT_TRUE(repeated.guards) << "this machine's manifest, waited for by the repeat";
    EXPECT_EQ(*repeated.guards, *built.guards) << "the same files, stamped on this machine";
  }
  {
    Cache next(new_machine(fresh)); // the next process: the manifest was written at flush
    detail::core_of(next).set_stamp_clock(clock.clock());
    const auto mine = detail::core_of(next).recall("opencl", name);
    ASSERT_TRUE(mine);
    EXPECT_EQ(mine->guards, *built.guards);
    EXPECT_TRUE(detail::core_of(next).peek("opencl", detail::paths_name(name),
                                           [](const detail::RecordView&) {}))
        << "the paths beside it, for export";
  }

  {
    // A fork()ed child has no copy of the thread making the manifest: it waits for none (a wait
    // would end after CacheCore::k_made_wait, with a line in the log, which the child reads).
    auto forking = new_machine(dir.path() / "a forking machine");
    forking.log_level = LogLevel::info;
    Cache cache(forking);
    detail::CacheCore& core = detail::core_of(cache);
    core.set_stamp_clock(clock.clock());
    detail::PendingKey first(core, "opencl", name, build(source), true);
    ASSERT_TRUE(first.settle()->recalled);
    const fs::path log = dir.path() / "child.log";
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::alarm(60); // a wait that never ends fails the test, killed
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, STDERR_FILENO);
      const bool found = core.peek("opencl", name, [](const detail::RecordView&) {});
      core.flush();
      std::ifstream in(log);
      const std::string said((std::istreambuf_iterator<char>(in)), {});
      ::_exit(found || said.find("not made in time") != std::string::npos ? 1 : 0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    EXPECT_TRUE(core.peek("opencl", name, [](const detail::RecordView&) {}))
        << "the parent still remembers it";
    log::set_level(LogLevel::warn); // as the other tests of this process expect
  }

  {
    // A read-only user tier (JITCACHE_READONLY): served from the package, nothing written, and
    // the flush waits for no manifest it would not write.
    const fs::path read_only = dir.path() / "a read-only machine";
    ASSERT_TRUE(open_user_store(new_machine(read_only), false)); // exists, holds nothing
    auto config = new_machine(read_only);
    config.read_only = true;
    {
      Cache cache(config);
      detail::core_of(cache).set_stamp_clock(clock.clock());
      const auto answered =
          *detail::PendingKey(detail::core_of(cache), "opencl", name, build(source), true).settle();
      EXPECT_TRUE(answered.recalled);
      EXPECT_EQ(answered.key.digest, built.key.digest);
    }
    Cache after(new_machine(read_only));
    EXPECT_FALSE(detail::core_of(after).peek("opencl", name, [](const detail::RecordView&) {}))
        << "a read-only user tier is not written";
  }

  const fs::path crowd = dir.path() / "a crowd";
  constexpr int k_at_once = 8, k_in_a_row = 30;
  std::vector<std::optional<detail::GuardedKey>> answers(k_at_once + k_in_a_row);
  const auto one_process = [&](int i) {
    Cache cache(new_machine(crowd));
    detail::core_of(cache).set_stamp_clock(clock.clock());
    answers[i] =
        *detail::PendingKey(detail::core_of(cache), "opencl", name, build(source), true).settle();
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < k_at_once; ++i)
    threads.emplace_back(one_process, i);
  for (auto& thread : threads)
    thread.join();
  for (int i = k_at_once; i < k_at_once + k_in_a_row; ++i)
    one_process(i);
  for (const auto& answer : answers) {
    ASSERT_TRUE(answer);
    EXPECT_TRUE(answer->recalled);
    EXPECT_EQ(answer->key.digest, built.key.digest);
  }
  EXPECT_EQ(builds, 1) << "only the exporting machine built the key";
}

// Remembering writes nothing while the process works (a synced write beside a request delays
// it): the records are written when the Cache is flushed, all of them in one write.
TEST_F(ManifestTest, RecordsAreWrittenAtFlushAllInOneWrite) {
  write_file(dir.path() / "second/a.h", "int a;\n");
  let_stamps_settle();
  const std::vector<std::string> sources{"#include <a.h>\n", "#include <a.h>\nint x;\n",
                                         "#include <a.h>\nint y;\n"};
  auto user = open_user_store(config(), false);
  ASSERT_TRUE(user);
  auto counted = std::make_shared<test::FaultyUserTier>(*user);
  {
    Cache cache(config(), detail::TierSet::of_user(counted));
    detail::core_of(cache).set_stamp_clock(clock.clock());
    for (const std::string& source : sources) {
      auto made = detail::manifest_key(detail::core_of(cache), "opencl",
                                       detail::record_name("test key", {source}), build(source));
      ASSERT_TRUE(made);
      EXPECT_FALSE(made->recalled);
    }
    // The same requests again in this process find what it holds: no file is read again.
    for (const std::string& source : sources) {
      auto again = detail::manifest_key(detail::core_of(cache), "opencl",
                                        detail::record_name("test key", {source}), build(source));
      ASSERT_TRUE(again);
      EXPECT_TRUE(again->recalled) << source;
    }
    EXPECT_EQ(counted->calls(test::FaultyUserTier::Op::put_records), 0);
    cache.flush();
    EXPECT_EQ(counted->calls(test::FaultyUserTier::Op::put_records), 1);
  }
  for (const std::string& source : sources)
    EXPECT_TRUE(key(source).recalled) << source;
  EXPECT_EQ(builds, 3);
}

// What a long-lived process holds stays bounded: once the records held reach the bound, they are
// written in the background (all of them in one write), and the rest at flush.
TEST_F(ManifestTest, RecordsHeldPastTheBoundAreWrittenBeforeTheFlush) {
  auto user = open_user_store(config(), false);
  ASSERT_TRUE(user);
  auto counted = std::make_shared<test::FaultyUserTier>(*user);
  constexpr std::size_t k_quarter = detail::CacheCore::k_unsaved_record_bytes / 4;
  Cache cache(config(), detail::TierSet::of_user(counted));
  auto& core = detail::core_of(cache);
  const auto name = [](int i) { return Digest::of("record " + std::to_string(i)); };
  for (int i = 0; i < 3; ++i)
    core.remember("opencl", name(i), {std::string(k_quarter, 'g'), "key " + std::to_string(i)});
  const auto held = [&](int i) {
    return core.peek("opencl", name(i), [](const detail::RecordView&) {});
  };
  EXPECT_TRUE(held(0)) << "found where this process holds it";
  // Remembered again: counted once, so the bound is not reached.
  core.remember("opencl", name(2), {std::string(k_quarter, 'g'), "key 2"});
  EXPECT_EQ(counted->calls(test::FaultyUserTier::Op::put_records), 0)
      << "three quarters of the bound are held, not written";
  core.remember("opencl", name(3), {std::string(k_quarter, 'g'), "key 3"});
  core.remember("opencl", name(4), {"small", "key 4"});
  cache.flush(); // waits for the background write, then writes what is left
  EXPECT_EQ(counted->calls(test::FaultyUserTier::Op::put_records), 2);
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(held(i)) << i;
}

TEST_F(ManifestTest, NothingIsRememberedWithoutAWritableUserTier) {
  write_file(dir.path() / "second/a.h", "int a;\n");
  let_stamps_settle();
  const std::string source = "#include <a.h>\n";
  EXPECT_FALSE(key(source, config({{"JITCACHE_READONLY", "1"}})).recalled);
  EXPECT_FALSE(key(source, config({{"JITCACHE_READONLY", "1"}})).recalled);
  EXPECT_FALSE(key(source, config({{"JITCACHE_DISABLE", "opencl"}})).recalled);
  EXPECT_FALSE(key(source, config({{"JITCACHE_DISABLE", "opencl"}})).recalled);
  EXPECT_EQ(builds, 4);
  key(source);
  EXPECT_TRUE(key(source, config({{"JITCACHE_READONLY", "1"}})).recalled)
      << "a read-only cache still recalls what was remembered";
}

TEST_F(ManifestTest, ADamagedRecordIsBuiltAgainAndReplaced) {
  write_file(dir.path() / "second/a.h", "int a;\n");
  let_stamps_settle();
  const std::string source = "#include <a.h>\n";
  const Key first = key(source).key;
  const Digest name = detail::record_name("test key", {source});
  {
    auto store = LmdbStore::open(dir.path() / "cache" / "v1", false).value();
    std::string bytes = store->get_record(name).value().value();
    bytes[bytes.size() / 2] ^= 0x20;
    ASSERT_TRUE(store->put_records({{name, bytes}}));
  }
  const auto again = key(source);
  EXPECT_FALSE(again.recalled) << "a record that fails its checksum is not used";
  EXPECT_EQ(again.key.digest, first.digest);
  EXPECT_TRUE(key(source).recalled) << "and was replaced";
}

// The records of a user tier, by name, decoded (nullopt: not a record).
std::map<Digest, std::optional<detail::Record>> records_in(const fs::path& cache_dir) {
  std::map<Digest, std::optional<detail::Record>> out;
  auto store = LmdbStore::open(cache_dir / "v1", true).value();
  EXPECT_TRUE(store->for_each_record([&](const Digest& name, std::string_view bytes) {
    out[name] = detail::decode_record(bytes);
  }));
  return out;
}

// CuPy's 51 kernels share 4 scans of a thousand headers: their manifests have the same guards and
// the same paths, stored once as parts that each manifest names (tens of KB each, written and
// encoded once instead of once per kernel). 12 kernels of one scan in one process, then each
// recalled by a new one.
TEST_F(ManifestTest, TheKernelsOfOneScanStoreTheirGuardsAndPathsOnce) {
  std::string includes;
  for (int i = 0; i < 60; ++i) {
    write_file(dir.path() / "second" / ("h" + std::to_string(i) + ".h"),
               "int h" + std::to_string(i) + ";\n");
    includes += "#include <h" + std::to_string(i) + ".h>\n";
  }
  let_stamps_settle();
  const auto source = [&](int k) {
    return includes + "kernel void k" + std::to_string(k) + "() {}\n";
  };
  std::vector<detail::GuardedKey> built;
  {
    Cache cache(config()); // one process
    detail::core_of(cache).set_stamp_clock(clock.clock());
    for (int k = 0; k < 12; ++k)
      built.push_back(*detail::manifest_key(detail::core_of(cache), "opencl",
                                            detail::record_name("test key", {source(k)}),
                                            build(source(k))));
  }
  ASSERT_TRUE(built[0].guards);
  EXPECT_GT(built[0].guards->size(), 2000u);
  const auto records = records_in(dir.path() / "cache");
  std::size_t parts = 0, bytes = 0;
  std::set<std::optional<Digest>> guards_parts, paths_parts;
  for (int k = 0; k < 12; ++k) {
    const Digest name = detail::record_name("test key", {source(k)});
    ASSERT_TRUE(records.count(name) && records.at(name)) << k;
    EXPECT_TRUE(records.at(name)->guards.empty()) << k;
    guards_parts.insert(records.at(name)->guards_part);
    ASSERT_TRUE(records.count(detail::paths_name(name)) && records.at(detail::paths_name(name)));
    paths_parts.insert(records.at(detail::paths_name(name))->payload_part);
  }
  ASSERT_EQ(guards_parts.size(), 1u) << "every manifest names one guards' part";
  ASSERT_EQ(paths_parts.size(), 1u) << "and one paths' part";
  ASSERT_TRUE(*guards_parts.begin() && *paths_parts.begin());
  std::size_t part_bytes = 0;
  for (const auto& [name, record] : records) {
    ASSERT_TRUE(record);
    const std::size_t size = detail::encode_record(*record).size();
    bytes += size;
    const bool part = name == **guards_parts.begin() || name == **paths_parts.begin();
    parts += part;
    part_bytes += part ? size : 0;
  }
  EXPECT_EQ(parts, 2u);
  EXPECT_EQ(records.size(), 12u * 2 + 2) << "a manifest and its paths per kernel, 2 parts";
  EXPECT_EQ(records.at(**guards_parts.begin())->payload, *built[0].guards);
  EXPECT_GT(part_bytes, 2 * built[0].guards->size());
  EXPECT_LT(bytes, part_bytes + 12 * (built[0].key.stored_fields.size() + 200))
      << "the guards and the paths once, not once per kernel";

  // A new process recalls each kernel's key, reading the guards' part once: 14 reads of the user
  // tier's records, one for each manifest, and for the first its part and it again.
  detail::KnownParts::process().forget();
  auto user = open_user_store(config(), true);
  ASSERT_TRUE(user);
  auto counted = std::make_shared<test::FaultyUserTier>(*user);
  {
    Cache cache(config(), detail::TierSet::of_user(counted));
    detail::core_of(cache).set_stamp_clock(clock.clock());
    for (int k = 0; k < 12; ++k) {
      const auto recalled =
          *detail::manifest_key(detail::core_of(cache), "opencl",
                                detail::record_name("test key", {source(k)}), build(source(k)));
      EXPECT_TRUE(recalled.recalled) << k;
      EXPECT_EQ(recalled.key.digest, built[k].key.digest) << k;
      EXPECT_EQ(recalled.guards, built[k].guards) << k;
    }
    EXPECT_EQ(counted->calls(test::FaultyUserTier::Op::visit_record), 12 + 2);
  }
  EXPECT_EQ(builds, 12);

  // The process knows the parts now; a Cache on another user tier must still write them there,
  // or that tier's next process could use none of its manifests.
  const fs::path other = dir.path() / "other cache";
  {
    Cache cache(config({{"JITCACHE_DIR", other.string()}}));
    detail::core_of(cache).set_stamp_clock(clock.clock());
    for (int k = 0; k < 2; ++k)
      EXPECT_FALSE(detail::manifest_key(detail::core_of(cache), "opencl",
                                        detail::record_name("test key", {source(k)}),
                                        build(source(k)))
                       ->recalled);
  }
  const auto there = records_in(other);
  EXPECT_EQ(there.size(), 2u * 2 + 2);
  EXPECT_TRUE(there.count(**guards_parts.begin()) && there.count(**paths_parts.begin()));
  detail::KnownParts::process().forget(); // its next process
  Cache next(config({{"JITCACHE_DIR", other.string()}}));
  detail::core_of(next).set_stamp_clock(clock.clock());
  EXPECT_TRUE(detail::manifest_key(detail::core_of(next), "opencl",
                                   detail::record_name("test key", {source(1)}), build(source(1)))
                  ->recalled);
  EXPECT_EQ(builds, 14);
}

// A part is found by its name in every manifest that needs it, so damage to it (bytes flipped
// anywhere, a value that is not a record, one that names parts itself, a record of other
// bytes) must leave every manifest naming it unused: each key is built again, the same, and
// remembered with its parts again for the next process.
TEST_F(ManifestTest, AManifestWhosePartIsDamagedIsBuiltAgainAndReplaced) {
  std::string source;
  for (int i = 0; i < 20; ++i) {
    write_file(dir.path() / "second" / ("h" + std::to_string(i) + ".h"), "int h;\n");
    source += "#include <h" + std::to_string(i) + ".h>\n";
  }
  let_stamps_settle();
  const detail::GuardedKey first = key(source);
  const Digest name = detail::record_name("test key", {source});
  const auto records = records_in(dir.path() / "cache");
  ASSERT_TRUE(records.at(name) && records.at(name)->guards_part);
  const Digest part = *records.at(name)->guards_part;
  const std::string good = detail::encode_record(*records.at(part));
  std::mt19937 random(7);
  std::vector<std::pair<std::string, std::string>> damages = {
      {"not a record", "not a record"},
      {"names a part itself", detail::encode_record({{}, {}, std::nullopt, part})},
      {"holds guards", detail::encode_record({records.at(part)->payload, "x"})},
      {"empty", ""}};
  for (int trial = 0; trial < 12; ++trial) {
    std::string bytes = good;
    bytes[random() % bytes.size()] ^= static_cast<char>(1 + random() % 255);
    damages.push_back({"a byte flipped", bytes});
  }
  damages.push_back({"truncated", good.substr(0, good.size() - 1)});
  for (const auto& [what, bytes] : damages) {
    SCOPED_TRACE(what);
    {
      auto store = LmdbStore::open(dir.path() / "cache" / "v1", false).value();
      ASSERT_TRUE(store->put_records({{part, bytes}}));
    }
    const int before = builds;
    detail::KnownParts::process().forget(); // a new process: the part is read from the disk
    const auto again = key(source);
    EXPECT_FALSE(again.recalled);
    EXPECT_EQ(builds, before + 1);
    EXPECT_EQ(again.key.digest, first.key.digest);
    detail::KnownParts::process().forget();
    const auto next = key(source);
    EXPECT_TRUE(next.recalled) << "the part was written again";
    EXPECT_EQ(next.guards, first.guards);
  }
}

// A record that names parts: round trips for each way, and every truncation, every flipped byte
// and every other "which parts" byte is refused.
TEST(RecordCodec, ARecordNamingPartsRoundTripsAndRefusesDamage) {
  const Digest guards = Digest::of("guards"), payload = Digest::of("payload");
  for (const detail::Record& record : {detail::Record{{}, "key", guards, std::nullopt},
                                       detail::Record{"stamps", {}, std::nullopt, payload},
                                       detail::Record{{}, {}, guards, payload}}) {
    const std::string bytes = detail::encode_record(record);
    auto back = detail::decode_record(bytes);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->guards, record.guards);
    EXPECT_EQ(back->payload, record.payload);
    EXPECT_EQ(back->guards_part, record.guards_part);
    EXPECT_EQ(back->payload_part, record.payload_part);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(detail::decode_record(bytes.substr(0, n))) << n;
      for (int bit = 0; bit < 8; ++bit) {
        std::string flipped = bytes;
        flipped[n] ^= static_cast<char>(1 << bit);
        EXPECT_FALSE(detail::decode_record(flipped)) << n << " " << bit;
      }
    }
  }
  // Sealed right, with a "which" byte that names nothing or what is not there.
  std::string body;
  body.push_back(1);
  detail::append_sized(body, std::string_view("too short for a digest"));
  detail::append_sized(body, std::string_view("key"));
  EXPECT_FALSE(detail::decode_record(detail::seal("JCR2", body)));
  for (char which : {0, 4, 5}) {
    std::string other;
    other.push_back(which);
    detail::append_sized(other, std::string_view("stamps"));
    detail::append_sized(other, std::string_view("key"));
    EXPECT_FALSE(detail::decode_record(detail::seal("JCR2", other))) << int(which);
  }
  EXPECT_EQ(detail::part_name("a"), detail::part_name("a"));
  EXPECT_NE(detail::part_name("a"), detail::part_name("b"));
  EXPECT_NE(detail::part_name("a"), detail::record_name("test key", {"a"}));
}

TEST(RecordCodec, RoundTripsChecksStampsAndRejectsEveryTruncation) {
  // Stamps of this test's own directory only (other tests change /tmp and the current
  // directory); a relative path is resolved from the current directory, so it goes there.
  test::TempDir dir;
  write_file(dir.path() / "sub/a.h", "int a;\n");
  const fs::path before = fs::current_path();
  fs::current_path(dir.path());
  struct Return {
    fs::path to;
    ~Return() { fs::current_path(to); }
  } go_back{before};
  const std::vector<detail::FileStamp> stamps{
      detail::stamp_of(dir.path().string()), detail::stamp_of((dir.path() / "sub").string()),
      detail::FileStamp{(dir.path() / "absent/x.h").string()}, detail::stamp_of("."),
      detail::stamp_of("sub/a.h")};
  const detail::Record record{detail::encode_stamps(stamps), "payload"};
  const std::string bytes = detail::encode_record(record);
  auto back = detail::decode_record(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->payload, "payload");
  EXPECT_TRUE(detail::unchanged(back->guards));
  auto decoded = detail::decode_stamps(back->guards);
  ASSERT_TRUE(decoded);
  ASSERT_EQ(decoded->size(), stamps.size());
  for (std::size_t i = 0; i < stamps.size(); ++i)
    EXPECT_TRUE((*decoded)[i] == stamps[i])
        << stamps[i].path << " came back as " << (*decoded)[i].path;
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(detail::decode_record(bytes.substr(0, n))) << n;
  for (std::size_t n = 0; n < record.guards.size(); ++n)
    EXPECT_FALSE(detail::unchanged(record.guards.substr(0, n))) << n;
  auto moved = stamps;
  moved[1].mtime_ns += 1;
  EXPECT_FALSE(detail::unchanged(detail::encode_stamps(moved)));
  moved = stamps;
  moved[2].exists = true;
  EXPECT_FALSE(detail::unchanged(detail::encode_stamps(moved)));
  // The root splits into itself and "." (its stat fields are not needed to round-trip it).
  const std::vector<detail::FileStamp> root{detail::FileStamp{"/"}};
  EXPECT_EQ(detail::decode_stamps(detail::encode_stamps(root)), root);

  const Key key = KeyBuilder("cuda").device("arch", "sm_80").source(std::string(300, 'x')).finish();
  auto key_back = detail::decode_key(detail::encode_key(key));
  ASSERT_TRUE(key_back);
  EXPECT_EQ(key_back->digest, key.digest);
  EXPECT_EQ(key_back->backend, "cuda");
  EXPECT_EQ(key_back->stored_fields, key.stored_fields);
}

} // namespace
} // namespace jitcache
