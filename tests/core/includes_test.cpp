#include "core/key/dependencies.hpp"
#include "core/key/includes.hpp"
#include "tests/support/fake_clock.hpp"
#include "tests/support/files.hpp"
#include "tests/support/in_folder.hpp"
#include "tests/support/open_count.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace jitcache {

using detail::add_source_fields;
using detail::Dependencies;
using detail::scan_includes;
using detail::SourceInputs;
using detail::split_options;
namespace {
using test::write_file;

TEST(IncludesTest, FollowsIncludePathsRecursivelyOnce) {
  test::TempDir dir;
  write_file(dir.path() / "inc/a.h", "#include \"b.h\"\nint a;\n");
  write_file(dir.path() / "inc/b.h", "#pragma once\nint b;\n#include \"a.h\"\n");
  write_file(dir.path() / "other/c.h", "int c;\n");
  const std::string source =
      "#include <a.h>\n  #  include \"c.h\"\n#include <stdint.h>\n#include \"mem.h\"\n";
  auto headers =
      scan_includes(source, {dir.path() / "inc", dir.path() / "other"}, {{"mem.h", "int m;"}})
          .headers;
  ASSERT_EQ(headers.size(), 4u);
  EXPECT_EQ(headers[0].name, "a.h");
  EXPECT_NE(headers[0].path.find("inc/a.h"), std::string::npos);
  EXPECT_NE(headers[1].path.find("inc/b.h"), std::string::npos);
  EXPECT_NE(headers[2].path.find("other/c.h"), std::string::npos);
  EXPECT_EQ(headers[3].name, "mem.h");
  EXPECT_EQ(headers[3].content, "int m;");
}

// A process compiles many kernels that include the same headers (CuPy: every kernel includes
// <cupy/carray.cuh> and the toolkit headers it pulls in): a header read before, whose stamp
// still holds, is not opened again.
TEST(IncludesTest, AHeaderReadBeforeIsNotOpenedAgainWhileItsStampHolds) {
  test::TempDir dir;
  const auto inc = dir.path() / "inc";
  write_file(inc / "a.h", "#include \"b.h\"\nint a;\n");
  write_file(inc / "b.h", "int b;\n");
  test::FakeClock clock;
  clock.advance(std::chrono::seconds(3)); // the files are old enough to vouch for their content
  ASSERT_EQ(scan_includes("#include <a.h>\n", {inc}).headers.size(), 2u);
  test::OpenCount opens(inc);
  ASSERT_TRUE(opens.watching());
  auto again = scan_includes("// another kernel\n#include <a.h>\n", {inc});
  EXPECT_EQ(opens.take(), (std::map<std::string, int>{}));
  ASSERT_EQ(again.headers.size(), 2u);
  EXPECT_EQ(again.headers[0].content, "#include \"b.h\"\nint a;\n");
  EXPECT_EQ(again.headers[1].content, "int b;\n");
  EXPECT_TRUE(again.headers[1].stamp.exists);

  // A header changed since: read again, and what it includes now is followed.
  write_file(inc / "b.h", "#include \"c.h\"\nint b;\n");
  write_file(inc / "c.h", "int c;\n");
  clock.advance(std::chrono::seconds(3));
  opens.take(); // the writes'
  auto changed = scan_includes("#include <a.h>\n", {inc});
  ASSERT_EQ(changed.headers.size(), 3u);
  EXPECT_EQ(changed.headers[1].content, "#include \"c.h\"\nint b;\n");
  EXPECT_EQ(changed.headers[2].content, "int c;\n");
  EXPECT_EQ(opens.take(), (std::map<std::string, int>{{"b.h", 1}, {"c.h", 1}}));
}

// A stamp taken within the clock's tick of a write cannot tell two writes of the same size
// apart: such a header is read each time.
TEST(IncludesTest, AHeaderWrittenTooRecentlyToVouchIsReadEachTime) {
  test::TempDir dir;
  const auto inc = dir.path() / "inc";
  write_file(inc / "a.h", "int a;\n");
  test::FakeClock clock; // stands still: every file written now stays too recent
  ASSERT_EQ(scan_includes("#include <a.h>\n", {inc}).headers.at(0).content, "int a;\n");
  write_file(inc / "a.h", "int b;\n"); // same size, maybe the same stamp
  EXPECT_EQ(scan_includes("#include <a.h>\n", {inc}).headers.at(0).content, "int b;\n");
}

TEST(IncludesTest, ARemovedCurrentDirectoryIsLeftOutNotThrown) {
  test::TempDir dir;
  write_file(dir.path() / "inc/a.h", "int a;\n");
  const auto gone = dir.path() / "gone";
  std::filesystem::create_directories(gone);
  const auto before = std::filesystem::current_path();
  ASSERT_EQ(::chdir(gone.c_str()), 0);
  std::filesystem::remove(gone);
  KeyBuilder builder("opencl");
  Dependencies deps;
  EXPECT_NO_THROW(deps =
                      add_source_fields(builder, SourceInputs{"#include <a.h>\n#include \"b.h\"\n",
                                                              "-I" + (dir.path() / "inc").string(),
                                                              {},
                                                              {}}));
  std::filesystem::current_path(before);
  ASSERT_EQ(deps.files().read.size(), 1u) << "a.h, found through -I";
  EXPECT_EQ(deps.files().read[0].path, (dir.path() / "inc/a.h").string());
}

TEST(IncludesTest, AQuotedIncludeFromAHeaderFoundThroughDotIsSearchedThereFirst) {
  // `-I.`: a.h is found as "a.h", whose folder is "", and its #include "b.h" must find ./b.h
  // (its own folder first) even after <b.h> found sys/b.h: the two searches differ.
  test::TempDir dir;
  write_file(dir.path() / "sys/b.h", "int sys_b;\n");
  write_file(dir.path() / "b.h", "int local_b;\n");
  write_file(dir.path() / "a.h", "#include \"b.h\"\n");
  const auto before = std::filesystem::current_path();
  ASSERT_EQ(::chdir(dir.path().c_str()), 0);
  const auto headers =
      scan_includes("#include <b.h>\n#include <a.h>\n", {dir.path() / "sys", "."}, {}).headers;
  std::filesystem::current_path(before);
  std::vector<std::string> contents;
  for (const auto& header : headers)
    contents.emplace_back(header.content);
  EXPECT_EQ(contents,
            (std::vector<std::string>{"int sys_b;\n", "#include \"b.h\"\n", "int local_b;\n"}));
}

TEST(IncludesTest, AHeaderThatIsAFifoIsNotWaitedOn) {
  // Opening a FIFO with no writer for reading would wait for one: a header that is not a
  // regular file is not read (the compiler reports it), and building the key returns.
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "inc");
  ASSERT_EQ(::mkfifo((dir.path() / "inc/f.h").c_str(), 0600), 0);
  KeyBuilder builder("opencl");
  const Dependencies deps = add_source_fields(
      builder, SourceInputs{"#include <f.h>\n", "-I" + (dir.path() / "inc").string(), {}, {}});
  EXPECT_TRUE(deps.files().read.empty());
}

TEST(IncludesTest, FirstIncludeDirWins) {
  test::TempDir dir;
  write_file(dir.path() / "one/x.h", "one");
  write_file(dir.path() / "two/x.h", "two");
  auto a = scan_includes("#include <x.h>", {dir.path() / "one", dir.path() / "two"}).headers;
  auto b = scan_includes("#include <x.h>", {dir.path() / "two", dir.path() / "one"}).headers;
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].content, "one");
  EXPECT_EQ(b[0].content, "two");
}

TEST(IncludesTest, ComputedIncludesAreReported) {
  auto scan = scan_includes("#include CONFIG_H // chosen by -D\n#include <none.h>\n", {});
  EXPECT_TRUE(scan.headers.empty());
  ASSERT_EQ(scan.computed.size(), 1u);
  EXPECT_EQ(scan.computed[0].macro, "CONFIG_H");
  EXPECT_EQ(scan.computed[0].folder, std::filesystem::current_path());
}

// An `#include MACRO` keys every file the macro could name, the current directory's among them:
// a data file there larger than any header (sparse here: 1 GiB) is keyed by its name, size and
// time, never opened; small files there are read. Touching it changes the key.
TEST(IncludesTest, AComputedIncludeNeverReadsALargeDataFileWhereTheProgramRuns) {
  test::TempDir dir;
  write_file(dir.path() / "small.h", "int small;\n");
  const auto large = dir.path() / "data.bin";
  { std::ofstream(large) << ""; }
  std::filesystem::resize_file(large, std::uint64_t(1) << 30);
  const auto before = std::filesystem::current_path();
  ASSERT_EQ(::chdir(dir.path().c_str()), 0);
  const auto key = [] {
    KeyBuilder builder("cuda");
    const Dependencies deps =
        add_source_fields(builder, SourceInputs{"#define H \"small.h\"\n#include H\n", "", {}, {}});
    return std::make_pair(builder.finish().digest, deps);
  };
  test::OpenCount opens(dir.path());
  ASSERT_TRUE(opens.watching());
  const auto [first, deps] = key();
  const auto opened = opens.take();
  std::filesystem::current_path(before);
  EXPECT_EQ(opened.count("data.bin"), 0u) << test::names(opened);
  EXPECT_EQ(opened.count("small.h"), 1u) << test::names(opened);
  bool stamped = false;
  for (const auto& stamp : deps.files().read)
    stamped = stamped || (stamp.path.find("data.bin") != std::string::npos &&
                          stamp.size == (std::uint64_t(1) << 30));
  EXPECT_TRUE(stamped) << "the large file's stamp guards the key";

  ASSERT_EQ(::chdir(dir.path().c_str()), 0);
  EXPECT_EQ(key().first, first);
  const struct timespec times[2] = {{0, UTIME_OMIT}, {1000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, large.c_str(), times, 0), 0);
  EXPECT_NE(key().first, first) << "the large file, touched, changes the key";
  std::filesystem::current_path(before);
}

using HeaderFields = std::vector<std::tuple<std::string, std::string, std::string>>;

// The header fields (name, content, where found) of a key add_source_fields built, in order.
// The key built with the headers' stored forms (the default) is checked to be the same.
HeaderFields header_fields(const std::string& source, const std::string& options) {
  const auto built = [&](bool contents) {
    KeyBuilder builder("cuda");
    add_source_fields(builder, SourceInputs{source, options, {}, {}, contents});
    return std::move(builder).finish();
  };
  const Key key = built(true);
  const Key stored = built(false);
  EXPECT_EQ(stored.digest, key.digest);
  EXPECT_EQ(stored.stored_fields, key.stored_fields);
  HeaderFields out;
  for (const KeyField& field : all_fields(key))
    if (field.section == KeySection::header)
      out.emplace_back(field.name, field.value, field.detail);
  return out;
}

// The same, made by a scan of the files now (scan_includes remembers no scan).
HeaderFields scanned_fields(const std::string& source,
                            const std::vector<std::filesystem::path>& dirs) {
  std::vector<std::filesystem::path> searched = dirs;
  searched.push_back(std::filesystem::current_path());
  HeaderFields out;
  for (const auto& header : scan_includes(source, searched).headers)
    out.emplace_back(header.name, std::string(header.content), header.path);
  return out;
}

// The content `fields` hold for the file at `path`, or null when they hold none.
const std::string* content_of(const HeaderFields& fields, const std::filesystem::path& path) {
  for (const auto& [name, content, where] : fields)
    if (where == path.string())
      return &content;
  return nullptr;
}

// A process builds many keys with the same includes, and add_source_fields remembers each scan
// while every file it read, every folder it listed and the nearest folder of every path it
// looked for keep their stamps. 2,000 random changes to three include folders (a header written,
// rewritten to the same size, removed, a header that shadows another in an earlier folder,
// made a symbolic link to another (or to nothing, or to itself), nothing at all), each made
// older than a stamp can vouch for (the clock moved on, the times
// set apart): after each, the key's header fields equal those of a scan of the files as they
// are. JITCACHE_HOSTILE_SEED changes the seed; a failure names it and the trial.
TEST(IncludesTest, ARememberedScanServesOnlyWhileEveryFileItFoundOrMissedHolds) {
  test::TempDir dir;
  const test::InFolder cwd(dir.path() / "cwd");
  const std::vector<std::filesystem::path> dirs = {dir.path() / "d0", dir.path() / "d1",
                                                   dir.path() / "d2"};
  std::string options;
  for (const auto& d : dirs) {
    std::filesystem::create_directories(d);
    options += " -I " + d.string();
  }
  const char* seed_variable = std::getenv("JITCACHE_HOSTILE_SEED");
  const std::uint32_t seed =
      seed_variable ? static_cast<std::uint32_t>(std::stoul(seed_variable)) : 20261127u;
  std::mt19937 random(seed);
  const std::vector<std::string> names = {"a.h", "b.h", "c.h", "d.h"};
  test::FakeClock clock;
  std::int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count() -
                         100000;
  const auto set_time = [&](const std::filesystem::path& path) {
    const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
  };
  int remembered = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const auto& folder = dirs[random() % dirs.size()];
    const auto file = folder / names[random() % names.size()];
    ++seconds;
    switch (random() % 5) {
    case 0:
    case 1: { // (re)written: includes of the others, quoted or angled, and a size that repeats
      std::string text = "int v" + std::to_string(random() % 10) + ";\n";
      for (const std::string& name : names)
        if (random() % 3 == 0)
          text += random() % 2 ? "#include \"" + name + "\"\n" : "#include <" + name + ">\n";
      std::ofstream(file) << text;
      set_time(file);
      break;
    }
    case 2:
      std::filesystem::remove(file);
      break;
    case 3: // made a symbolic link to a header (maybe absent, maybe itself: a loop)
      std::filesystem::remove(file);
      std::filesystem::create_symlink(dirs[random() % dirs.size()] / names[random() % names.size()],
                                      file);
      break;
    default: // nothing changed: the remembered scan answers
      ++remembered;
      break;
    }
    set_time(folder);
    clock.advance(std::chrono::seconds(3));
    const std::string source =
        "// kernel " + std::to_string(trial) + "\n#include <a.h>\n" + "#include \"b.h\"\n";
    ASSERT_EQ(header_fields(source, options), scanned_fields(source, dirs))
        << "trial " << trial << ", seed " << seed;
  }
  EXPECT_GT(remembered, 0);
}

// The scan of a header written within the clock's tick is not remembered: a rewrite to the same
// size may keep its stamp, so the next key reads the header again (and sees its new content).
TEST(IncludesTest, AScanOfAHeaderWrittenTooRecentlyToVouchIsMadeEachTime) {
  test::TempDir dir;
  const test::InFolder cwd(dir.path() / "cwd");
  const auto inc = dir.path() / "inc";
  write_file(inc / "a.h", "int a;\n");
  test::FakeClock clock; // stands still: every file written now stays too recent
  const std::string options = "-I " + inc.string();
  ASSERT_EQ(std::get<1>(header_fields("#include <a.h>\n", options).at(0)), "int a;\n");
  test::OpenCount opens(inc);
  ASSERT_TRUE(opens.watching());
  EXPECT_EQ(std::get<1>(header_fields("// again\n#include <a.h>\n", options).at(0)), "int a;\n");
  EXPECT_EQ(opens.take(), (std::map<std::string, int>{{"a.h", 1}})) << "read again";
  write_file(inc / "a.h", "int b;\n"); // same size, maybe the same stamp
  opens.take();                        // the write's
  EXPECT_EQ(std::get<1>(header_fields("// once more\n#include <a.h>\n", options).at(0)),
            "int b;\n");
}

// 8 threads building keys from the same includes at once, 30 times each, while one thread
// changes a header between rounds: every key equals a scan of the files as they were.
TEST(IncludesTest, ThreadsTakingARememberedScanAtOnceAllGetTheFilesAsTheyAre) {
  test::TempDir dir;
  const test::InFolder cwd(dir.path() / "cwd");
  const auto inc = dir.path() / "inc";
  write_file(inc / "a.h", "#include \"b.h\"\nint a;\n");
  write_file(inc / "b.h", "int b;\n");
  test::FakeClock clock;
  clock.advance(std::chrono::seconds(3));
  const std::string options = "-I " + inc.string();
  for (int round = 0; round < 3; ++round) {
    const HeaderFields expected = scanned_fields("#include <a.h>\n", {inc});
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 30; ++i)
          if (header_fields("// " + std::to_string(t) + "\n#include <a.h>\n", options) != expected)
            ++wrong;
      });
    for (std::thread& thread : threads)
      thread.join();
    EXPECT_EQ(wrong.load(), 0) << "round " << round;
    write_file(inc / "b.h", "int b" + std::to_string(round) + ";\n");
    const struct timespec times[2] = {{1000000 + round, 0}, {1000000 + round, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (inc / "b.h").c_str(), times, 0), 0); // a time of its own
    clock.advance(std::chrono::seconds(3));
  }
}

// An `#include MACRO` keys every file the include folders hold: a file added to one after the
// scan was remembered (its folder's stamp changed) is in the next key.
TEST(IncludesTest, ARememberedScanOfAComputedIncludeSeesAFileAddedSince) {
  test::TempDir dir;
  const test::InFolder cwd(dir.path() / "cwd");
  const auto inc = dir.path() / "inc";
  write_file(inc / "config_a.h", "int a;\n");
  test::FakeClock clock;
  clock.advance(std::chrono::seconds(3));
  const std::string source = "#include CONFIG\n";
  const std::string options = "-I " + inc.string();
  const HeaderFields first = header_fields(source, options);
  EXPECT_EQ(header_fields("// again\n" + source, options), first);
  write_file(inc / "config_b.h", "int b;\n");
  clock.advance(std::chrono::seconds(3));
  const HeaderFields now = header_fields(source, options);
  ASSERT_EQ(now.size(), first.size() + 1);
  const std::string* added = content_of(now, inc / "config_b.h");
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(*added, "int b;\n");
}

// A header's `#include MACRO` (Thrust's system headers, which CUB pulls in) may name a file in
// that header's folder or in an include directory, never one in the current folder: a program's
// output written where it runs leaves its kernels' keys as they were, while a file added beside
// the header changes them. The source's own computed include still counts the current folder.
TEST(IncludesTest, AHeadersComputedIncludeIgnoresTheCurrentFolderButNotItsOwn) {
  test::TempDir dir;
  const test::InFolder cwd(dir.path() / "cwd");
  const auto lib = dir.path() / "lib";
  write_file(lib / "system.h", "#define TAG <lib_tag.h>\n#include TAG\n");
  write_file(lib / "lib_tag.h", "int tag;\n");
  test::FakeClock clock;
  clock.advance(std::chrono::seconds(3));
  const std::string source = "#include <system.h>\n";
  const std::string options = "-I " + lib.string();
  const HeaderFields first = header_fields(source, options);
  EXPECT_NE(content_of(first, lib / "lib_tag.h"), nullptr)
      << "a file beside the header is a candidate";

  write_file(dir.path() / "cwd" / "output.txt", "run 1\n");
  clock.advance(std::chrono::seconds(3));
  EXPECT_EQ(header_fields(source, options), first);
  write_file(dir.path() / "cwd" / "output.txt", "run 2, longer\n");
  clock.advance(std::chrono::seconds(3));
  EXPECT_EQ(header_fields(source, options), first);

  write_file(lib / "other_tag.h", "int other;\n");
  clock.advance(std::chrono::seconds(3));
  const HeaderFields added = header_fields(source, options);
  ASSERT_EQ(added.size(), first.size() + 1);

  EXPECT_NE(content_of(header_fields("#include TAG\n" + source, options),
                       dir.path() / "cwd" / "output.txt"),
            nullptr)
      << "the source's computed include counts the current folder";
}

// Quoted includes found nowhere are named (each once); angled ones are the runtime's to provide,
// and one found, given in memory or included twice is not.
// A key's header fields hold each header's stored form unless a record needs its content
// (SourceInputs::contents): the same key either way, a long header's content never copied.
TEST(IncludesTest, AKeyHoldsLongHeadersByTheirStoredFormUnlessContentsAreAskedFor) {
  test::TempDir dir;
  const test::InFolder cwd(dir.path() / "cwd");
  const std::string big = "// " + std::string(4096, 'x') + "\nint big;\n";
  write_file(dir.path() / "inc" / "big.h", big);
  write_file(dir.path() / "inc" / "small.h", "int small;\n");
  const std::string source = "#include \"big.h\"\n#include \"small.h\"\n";
  const std::string options = "-I " + (dir.path() / "inc").string();
  const auto headers = [&](bool contents) {
    KeyBuilder builder("cuda");
    add_source_fields(builder, SourceInputs{source, options, {}, {}, contents});
    std::map<std::string, std::string> out;
    for (const KeyField& field : all_fields(std::move(builder).finish()))
      if (field.section == KeySection::header)
        out[field.name] = field.value;
    return out;
  };
  for (int pass = 0; pass < 2; ++pass) { // twice: a scan remembered or made again
    const auto stored = headers(false);
    const auto contents = headers(true);
    EXPECT_EQ(stored.at("big.h"), "sha256:" + Digest::of(big).hex());
    EXPECT_EQ(stored.at("small.h"), "int small;\n");
    EXPECT_EQ(contents.at("big.h"), big);
    EXPECT_EQ(contents.at("small.h"), "int small;\n");
  }
  header_fields(source, options); // the two keys equal
}

TEST(IncludesTest, QuotedIncludesFoundNowhereAreNamed) {
  test::TempDir dir;
  write_file(dir.path() / "inc/a.h", "#include \"gone.h\"\n#include \"a.h\"\n");
  auto scan = scan_includes("#include \"a.h\"\n#include \"gone.h\"\n#include \"mem.h\"\n"
                            "#include <stdint.h>\n#include \"also_gone.h\"\n",
                            {dir.path() / "inc"}, {{"mem.h", "int m;"}});
  EXPECT_EQ(scan.unresolved, (std::vector<std::string>{"also_gone.h", "gone.h"}));
  EXPECT_EQ(scan.headers.size(), 2u); // a.h and mem.h
}

TEST(IncludesTest, SplitOptions) {
  auto tokens = split_options("-O2 -I/a -I b -I'c d' \"-DX=1 2\"");
  const std::vector<std::string> expect{"-O2", "-I/a", "-I", "b", "-Ic d", "-DX=1 2"};
  EXPECT_EQ(tokens, expect);
}

} // namespace
} // namespace jitcache
