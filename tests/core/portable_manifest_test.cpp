// Portable manifests: a key another machine built, proven here by stat(2) and the package
// managers' records for what they installed, by reading for the rest; never for a file whose
// content differs, whatever its size and times say.
#include "core/key/file_stamp.hpp"
#include "core/key/installed_files.hpp"
#include "core/key/portable_manifest.hpp"
#include "tests/support/damage.hpp"
#include "tests/support/file_times.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wheel_record.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <random>

namespace jitcache {

using detail::Dependencies;
using detail::InstalledFiles;
using detail::PortableManifest;
using test::ctime_ns;
using test::pip_digest;
using test::record_line;
using test::rewrite_keeping_mtime;
using test::stat_of;
using test::until_ctime_passes;
using test::write_file;
namespace {

namespace fs = std::filesystem;

// A toolkit installed from a wheel (tk/include/tk.h, tk/include/tk_detail.h, their RECORD
// written after them, as pip does) and an application header of no package (app/app.h).
class PortableManifestTest : public ::testing::Test {
protected:
  void SetUp() override {
    write_file(include() / "tk.h", k_tk);
    write_file(include() / "tk_detail.h", k_detail);
    write_file(app() / "app.h", "#define APP 1\n");
    std::string record;
    record += record_line("tk/include/tk.h", k_tk);
    record += record_line("tk/include/tk_detail.h", k_detail);
    record += "tk-1.0.dist-info/RECORD,,\n";
    write_file(record_file(), record);
  }
  fs::path site() const { return dir.path() / "site"; }
  fs::path include() const { return site() / "tk" / "include"; }
  fs::path app() const { return dir.path() / "app"; }
  fs::path record_file() const { return site() / "tk-1.0.dist-info" / "RECORD"; }

  // The manifest an exporting machine makes of a key built from the three headers, with one
  // include candidate (app/tk.h, searched before the toolkit) absent.
  PortableManifest exported() {
    Dependencies deps;
    for (const fs::path& p : {include() / "tk.h", include() / "tk_detail.h", app() / "app.h"}) {
      detail::FileStamp stamp;
      stamp.path = p.string();
      deps.read.push_back(stamp);
    }
    deps.absent.push_back((app() / "tk.h").string());
    InstalledFiles installed;
    auto made = detail::make_portable("the key", detail::encode_paths(deps), installed);
    EXPECT_TRUE(made);
    return *made;
  }

  std::optional<detail::Proven> prove(const PortableManifest& manifest) {
    InstalledFiles installed; // a new process's
    return detail::prove_portable(manifest, installed);
  }

  const std::string k_tk = "#pragma once\n#include \"tk_detail.h\"\n";
  const std::string k_detail = "#pragma once\nconstexpr int tk_value = 1;\n";
  test::TempDir dir;
};

TEST_F(PortableManifestTest, InstalledFilesAreVouchedForAndTheRestRead) {
  const PortableManifest manifest = exported();
  ASSERT_EQ(manifest.files.size(), 3u);
  ASSERT_TRUE(manifest.files[0].installed);
  EXPECT_EQ(manifest.files[0].installed->record, record_file().string());
  EXPECT_EQ(manifest.files[0].installed->entry, "tk/include/tk.h");
  EXPECT_TRUE(manifest.files[1].installed);
  EXPECT_FALSE(manifest.files[2].installed) << "no package manager installed app.h";

  auto proven = prove(manifest);
  ASSERT_TRUE(proven);
  EXPECT_EQ(proven->vouched, 2u);
  EXPECT_EQ(proven->read, 1u);
  ASSERT_EQ(proven->deps.read.size(), 3u);
  EXPECT_EQ(proven->deps.read[0].ino, stat_of(include() / "tk.h").st_ino) << "stamped here";
  EXPECT_EQ(proven->deps.absent, manifest.absent);
}

TEST_F(PortableManifestTest, ARoundTripKeepsEverything) {
  const PortableManifest manifest = exported();
  auto back = detail::decode_portable(detail::encode_portable(manifest));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->key, manifest.key);
  EXPECT_EQ(detail::portable_key(detail::encode_portable(manifest)), manifest.key);
  ASSERT_EQ(back->files.size(), manifest.files.size());
  for (std::size_t i = 0; i < manifest.files.size(); ++i) {
    EXPECT_EQ(back->files[i].path, manifest.files[i].path);
    EXPECT_EQ(back->files[i].size, manifest.files[i].size);
    EXPECT_EQ(back->files[i].mtime_ns, manifest.files[i].mtime_ns);
    EXPECT_EQ(back->files[i].content, manifest.files[i].content);
    EXPECT_EQ(back->files[i].installed.has_value(), manifest.files[i].installed.has_value());
  }
  EXPECT_EQ(back->absent, manifest.absent);
}

TEST_F(PortableManifestTest, AHeaderChangedWithItsSizeAndTimeKeptIsNotVouchedFor) {
  const PortableManifest manifest = exported();
  until_ctime_passes(record_file(), dir.path() / "scratch");
  std::string changed = k_detail;
  changed[changed.find('1')] = '2'; // same size
  rewrite_keeping_mtime(include() / "tk_detail.h", changed);
  const struct stat now = stat_of(include() / "tk_detail.h");
  ASSERT_EQ(std::int64_t(now.st_mtim.tv_sec) * 1000000000 + now.st_mtim.tv_nsec,
            manifest.files[1].mtime_ns);
  ASSERT_EQ(std::uint64_t(now.st_size), manifest.files[1].size);
  EXPECT_FALSE(prove(manifest)) << "read, and its content differs";

  // Its content back, its ctime still later than the record: read and found equal.
  rewrite_keeping_mtime(include() / "tk_detail.h", k_detail);
  auto proven = prove(manifest);
  ASSERT_TRUE(proven);
  EXPECT_EQ(proven->vouched, 1u);
  EXPECT_EQ(proven->read, 2u);
}

TEST_F(PortableManifestTest, AHeaderWithANewTimeOrSizeIsNotVouchedFor) {
  const PortableManifest manifest = exported();
  until_ctime_passes(record_file(), dir.path() / "scratch");
  write_file(include() / "tk.h", k_tk + "// more\n");
  EXPECT_FALSE(prove(manifest));
  write_file(include() / "tk.h", k_tk); // same bytes, changed after the record: read
  auto proven = prove(manifest);
  ASSERT_TRUE(proven);
  EXPECT_EQ(proven->vouched, 1u);
  EXPECT_EQ(proven->read, 2u);
}

TEST_F(PortableManifestTest, AnApplicationHeaderChangedIsFound) {
  const PortableManifest manifest = exported();
  rewrite_keeping_mtime(app() / "app.h", "#define APP 2\n");
  EXPECT_FALSE(prove(manifest));
}

TEST_F(PortableManifestTest, AnAbsentCandidateThatAppearedFailsTheProof) {
  const PortableManifest manifest = exported();
  write_file(app() / "tk.h", "// another tk.h, found first now\n");
  EXPECT_FALSE(prove(manifest));
  fs::remove(app() / "tk.h");
  fs::create_directory(app() / "tk.h"); // a folder is not a header
  EXPECT_TRUE(prove(manifest));
}

// Candidates in folders that do not exist (most of a toolkit's) are answered by one stat of the
// folder: the folder and the header appearing together still fail the proof, and so does a
// header appearing in one of several candidates' folder.
TEST_F(PortableManifestTest, ACandidateInAFolderThatDidNotExistFailsTheProofWhenItAppears) {
  Dependencies deps;
  for (const fs::path& p : {include() / "tk.h", include() / "tk_detail.h"}) {
    detail::FileStamp stamp;
    stamp.path = p.string();
    deps.read.push_back(stamp);
  }
  for (const char* name : {"a.h", "b.h", "sub/c.h"})
    deps.absent.push_back((app() / "gone" / name).string());
  deps.absent.push_back("relative/d.h");
  InstalledFiles installed;
  auto manifest = detail::make_portable("the key", detail::encode_paths(deps), installed);
  ASSERT_TRUE(manifest);
  EXPECT_TRUE(prove(*manifest));
  write_file(app() / "gone" / "other.h", "// the folder, not a candidate\n");
  EXPECT_TRUE(prove(*manifest));
  write_file(app() / "gone" / "b.h", "// a candidate, with its folder\n");
  EXPECT_FALSE(prove(*manifest));
  fs::remove_all(app() / "gone");
  write_file(app() / "gone" / "sub" / "c.h", "// two folders deep\n");
  EXPECT_FALSE(prove(*manifest));
  fs::remove_all(app() / "gone");
  EXPECT_TRUE(prove(*manifest));
  const auto before = fs::current_path();
  fs::current_path(app());
  write_file("relative/d.h", "// relative to the current directory\n");
  const bool proven = prove(*manifest).has_value();
  fs::current_path(before);
  EXPECT_FALSE(proven);
}

TEST_F(PortableManifestTest, ARecordThatNoLongerListsTheDigestVouchesForNothing) {
  const PortableManifest manifest = exported();
  write_file(record_file(),
             "tk/include/tk.h," + pip_digest("other") + "," + std::to_string(k_tk.size()) + "\n");
  auto proven = prove(manifest);
  ASSERT_TRUE(proven) << "the files are unchanged: read and found equal";
  EXPECT_EQ(proven->vouched, 0u);
  EXPECT_EQ(proven->read, 3u);
  fs::remove(record_file());
  proven = prove(manifest);
  ASSERT_TRUE(proven);
  EXPECT_EQ(proven->vouched, 0u);
}

// Damaged bytes anywhere in a package manager's record, or a FIFO in its place: it vouches for
// nothing, the headers are read and found equal, and nothing waits.
TEST_F(PortableManifestTest, ADamagedRecordOrAFifoVouchesForNothing) {
  const PortableManifest manifest = exported();
  std::ifstream in(record_file(), std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), {});
  ASSERT_FALSE(good.empty());
  const std::uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int trial = 0; trial < 200; ++trial) {
    const std::string bad = test::damaged(good, rng, trial);
    write_file(record_file(), bad);
    auto proven = prove(manifest);
    ASSERT_TRUE(proven) << "trial " << trial;
    EXPECT_EQ(proven->vouched, 0u) << "trial " << trial;
    EXPECT_EQ(proven->read, 3u) << "trial " << trial;
  }
  fs::remove(record_file());
  ASSERT_EQ(::mkfifo(record_file().c_str(), 0644), 0);
  auto proven = prove(manifest);
  ASSERT_TRUE(proven);
  EXPECT_EQ(proven->vouched, 0u);
}

TEST_F(PortableManifestTest, AMissingFileFailsTheProof) {
  const PortableManifest manifest = exported();
  fs::remove(include() / "tk_detail.h");
  EXPECT_FALSE(prove(manifest));
}

// A toolkit assembled from wheels under another prefix (root/include/..., the wheels' RECORDs in
// root/dist-info/): an entry names the file by the path below the root, after a prefix.
TEST_F(PortableManifestTest, AWheelMovedUnderAnotherPrefixIsFound) {
  const fs::path root = dir.path() / "toolkit";
  write_file(root / "include" / "moved.h", k_tk);
  write_file(root / "dist-info" / "moved-1.0.dist-info" / "RECORD",
             record_line("nvidia/cu/include/moved.h", k_tk));
  InstalledFiles installed;
  auto proof = installed.find((root / "include" / "moved.h").string(), k_tk);
  ASSERT_TRUE(proof);
  EXPECT_EQ(proof->entry, "nvidia/cu/include/moved.h");
  EXPECT_EQ(InstalledFiles::root_of(proof->record), root.string());
  EXPECT_TRUE(installed.vouches(*proof, (root / "include" / "moved.h").string(),
                                stat_of(root / "include" / "moved.h")));
  // The same entry does not name a file elsewhere, nor a file whose name merely ends alike.
  write_file(root / "other" / "include" / "moved.h", k_tk);
  EXPECT_FALSE(installed.vouches(*proof, (root / "other" / "include" / "moved.h").string(),
                                 stat_of(root / "other" / "include" / "moved.h")));
  EXPECT_FALSE(detail::entry_names("nvidia/cu/include/moved.h", root.string(),
                                   (root / "clude" / "moved.h").string()));
  EXPECT_FALSE(detail::entry_names("../include/moved.h", root.string(),
                                   (root / "include" / "moved.h").string()));
}

// A toolkit reached through a symbolic link (`/usr/local/cuda` -> `cuda-13.0`, which dpkg's
// records name): the record names where the link leads, and vouches for the path read while it
// leads to the same file.
TEST_F(PortableManifestTest, AFileReachedThroughALinkIsVouchedForWhileTheLinkLeadsToIt) {
  const fs::path link = dir.path() / "current";
  fs::create_directory_symlink(site() / "tk", link);
  const fs::path read = link / "include" / "tk.h";
  InstalledFiles installed;
  auto proof = installed.find(read.string(), k_tk);
  ASSERT_TRUE(proof);
  EXPECT_EQ(proof->file, fs::canonical(include() / "tk.h").string());
  EXPECT_TRUE(installed.vouches(*proof, read.string(), stat_of(read)));
  // The link retargeted to a copy with the same bytes: another file, not vouched for.
  const fs::path copy = dir.path() / "copy";
  fs::copy(site() / "tk", copy, fs::copy_options::recursive);
  fs::remove(link);
  fs::create_directory_symlink(copy, link);
  EXPECT_FALSE(installed.vouches(*proof, read.string(), stat_of(read)));
}

// The same through a whole proof: a manifest exported through the link is proven with one stat
// per header while the link leads to the installed toolkit; retargeted to a copy (the same
// bytes, files a record does not vouch for), its headers are read and found equal.
TEST_F(PortableManifestTest, AManifestReadThroughALinkIsProvenWhereTheLinkLeads) {
  const fs::path link = dir.path() / "current";
  fs::create_directory_symlink(site() / "tk", link);
  Dependencies deps;
  for (const fs::path& p : {link / "include" / "tk.h", link / "include" / "tk_detail.h"}) {
    detail::FileStamp stamp;
    stamp.path = p.string();
    deps.read.push_back(stamp);
  }
  InstalledFiles exporting;
  auto manifest = detail::make_portable("k", detail::encode_paths(deps), exporting);
  ASSERT_TRUE(manifest);
  ASSERT_TRUE(manifest->files[0].installed);
  auto proven = prove(*manifest);
  ASSERT_TRUE(proven);
  EXPECT_EQ(proven->vouched, 2u);
  EXPECT_EQ(proven->deps.read[0].path, (link / "include" / "tk.h").string()) << "as read";
  const fs::path copy = dir.path() / "copy";
  fs::copy(site() / "tk", copy, fs::copy_options::recursive);
  fs::remove(link);
  fs::create_directory_symlink(copy, link);
  proven = prove(*manifest);
  ASSERT_TRUE(proven);
  EXPECT_EQ(proven->vouched, 0u);
  EXPECT_EQ(proven->read, 2u);
  InstalledFiles installed;
  EXPECT_FALSE(
      installed.leads_to((link / "include" / "tk.h").string(), manifest->files[0].installed->file));
  EXPECT_TRUE(installed.leads_to((copy / "include" / "tk.h").string(),
                                 fs::canonical(copy / "include" / "tk.h").string()));
}

// dpkg's records, as this machine's package manager wrote them: a header of a Debian package is
// found and vouched for when one is installed.
TEST(InstalledFilesDpkg, ADebianPackagesHeaderIsVouchedFor) {
  const std::string header = "/usr/include/lmdb.h"; // liblmdb-dev: jitcache builds with it
  std::ifstream in(header, std::ios::binary);
  if (!in)
    GTEST_SKIP() << header << " is not installed";
  const std::string content((std::istreambuf_iterator<char>(in)), {});
  InstalledFiles installed;
  auto proof = installed.find(header, content);
  ASSERT_TRUE(proof) << "liblmdb-dev's md5sums lists it";
  EXPECT_EQ(proof->entry, "usr/include/lmdb.h");
  EXPECT_EQ(InstalledFiles::root_of(proof->record), "/");
  // Vouched for exactly while the header has not changed since dpkg wrote its record (how this
  // machine was installed decides which).
  EXPECT_EQ(installed.vouches(*proof, header, stat_of(header)),
            ctime_ns(header) <= ctime_ns(proof->record));
}

// Damaged bytes anywhere in a stored manifest: never a manifest that differs from the one
// written (a changed byte is refused by the checksum, a cut one by the framing).
TEST_F(PortableManifestTest, DamagedBytesAreRefused) {
  const std::string good = detail::encode_portable(exported());
  const std::uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int trial = 0; trial < 400; ++trial) {
    const std::string bad = test::damaged(good, rng, trial);
    EXPECT_FALSE(detail::decode_portable(bad)) << "trial " << trial;
    EXPECT_FALSE(detail::portable_key(bad)) << "trial " << trial;
  }
  EXPECT_FALSE(detail::decode_portable(""));
  EXPECT_TRUE(detail::decode_portable(good));
}

// The same damage with the checksum made right again, so the parser itself meets every bad
// length and count: never a crash or a read past the bytes (ASan), and what it decodes is
// exactly what the bytes say (encoding it again gives them back).
TEST_F(PortableManifestTest, DamagedBytesUnderARepairedChecksumNeverCrashTheParser) {
  PortableManifest manifest = exported();
  manifest.listings.push_back({include().string(), {"tk.h", "tk_detail.h"}});
  const std::string good = detail::encode_portable(manifest);
  const std::uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr std::size_t k_sealed = 12; // magic, XXH3-64
  int decoded = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string bad = good;
    for (int n = 1 + int(rng() % 4); n > 0; --n) {
      const std::size_t at = k_sealed + rng() % (bad.size() - k_sealed);
      bad[at] = static_cast<char>(trial % 2 ? rng() : bad[at] ^ (1 << (rng() % 8)));
    }
    if (trial % 5 == 4)
      bad.resize(k_sealed + rng() % (bad.size() - k_sealed));
    const std::uint64_t sum = XXH3_64bits(bad.data() + k_sealed, bad.size() - k_sealed);
    for (std::size_t i = 0; i < 8; ++i)
      bad[4 + i] = static_cast<char>(sum >> (8 * i));
    if (auto back = detail::decode_portable(bad)) { // then it is exactly what those bytes say
      ++decoded;
      EXPECT_EQ(detail::encode_portable(*back), bad) << "trial " << trial;
    }
  }
  std::cout << "seed " << seed << ": " << decoded << " of 400 decoded\n";
}

TEST(PortablePaths, MalformedPathsMakeNoManifest) {
  InstalledFiles installed;
  EXPECT_FALSE(detail::make_portable("k", "not paths", installed));
  Dependencies deps;
  deps.listed.push_back("/a folder that is not there");
  EXPECT_FALSE(detail::make_portable("k", detail::encode_paths(deps), installed));
}

// A key built from a folder's listing (`#include MACRO`): proven while the folder holds the same
// regular files, by name.
TEST_F(PortableManifestTest, AListedFolderMustHoldTheSameFiles) {
  Dependencies deps;
  detail::FileStamp stamp;
  stamp.path = (include() / "tk.h").string();
  deps.read.push_back(stamp);
  deps.listed.push_back(include().string());
  InstalledFiles installed;
  auto manifest = detail::make_portable("k", detail::encode_paths(deps), installed);
  ASSERT_TRUE(manifest);
  ASSERT_EQ(manifest->listings.size(), 1u);
  EXPECT_EQ(manifest->listings[0].names, (std::vector<std::string>{"tk.h", "tk_detail.h"}));
  auto back = detail::decode_portable(detail::encode_portable(*manifest));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->listings[0].names, manifest->listings[0].names);
  EXPECT_TRUE(prove(*manifest));
  fs::create_directory(include() / "a folder"); // not a regular file: the listing is the same
  EXPECT_TRUE(prove(*manifest));
  write_file(include() / "new.h", "");
  EXPECT_FALSE(prove(*manifest));
}

} // namespace
} // namespace jitcache
