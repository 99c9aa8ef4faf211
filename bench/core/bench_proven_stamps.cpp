// What proving a set of header stamps costs in a folder whose cached entries are many (a busy
// /tmp or home folder: the kernel keeps a dentry for every name looked up there, removed files'
// names too), side by side:
//   stat          a proof by stat alone, what every proof costs without a watch;
//   watch         the proof that sets the inotify watches (ProvenStamps watching from a set's
//                 first proof): the watches, then the stat calls;
//   by watch      a proof after that: one ioctl;
//   and the kernel's own cost of one inotify_add_watch on the busy folder, with the events that
//   FileWatch asks of a folder (names: IN_CREATE, IN_DELETE, IN_MOVED_*) and with IN_ATTRIB added
//   (what it asked before: the kernel then flags every cached entry of the folder).
//
// usage: bench_proven_stamps [DIR] [NAMES] [ROUNDS]   (default /tmp 100000 21)
//   Makes DIR/bench-proven-XXXXXX/busy, creates and removes NAMES files there (each leaves a
//   cached name behind), puts 4 folders of 10 headers in busy/include, and prints a Markdown
//   table of medians over ROUNDS rounds, each with a fresh ProvenStamps (a fresh process's).
#include "bench/median.hpp"
#include "core/engine/proven_stamps.hpp"
#include "core/key/file_stamp.hpp"
#include "core/support/clock.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using jitcache::bench::median;
using jitcache::detail::ProvenStamps;
using jitcache::detail::Stopwatch;

namespace {

// One inotify_add_watch of `folder` with `mask` on a fresh instance, in ms.
double add_watch_ms(const fs::path& folder, std::uint32_t mask) {
  const int fd = ::inotify_init1(IN_CLOEXEC);
  if (fd < 0)
    return -1;
  const Stopwatch watch;
  const int wd = ::inotify_add_watch(fd, folder.c_str(), mask);
  const double ms = watch.ms();
  ::close(fd);
  return wd < 0 ? -1 : ms;
}

} // namespace

int main(int argc, char** argv) {
  const fs::path parent = argc > 1 ? argv[1] : "/tmp";
  const int names = argc > 2 ? std::atoi(argv[2]) : 100000;
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 21;
  std::string pattern = (parent / "bench-proven-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("bench_proven_stamps: mkdtemp");
    return 1;
  }
  const fs::path root = pattern;
  const fs::path busy = root / "busy";
  fs::create_directories(busy / "include");
  for (int i = 0; i < names; ++i) {
    const fs::path file = busy / ("gone" + std::to_string(i));
    std::ofstream(file).put('x');
    fs::remove(file);
  }
  std::vector<jitcache::detail::FileStamp> stamps;
  for (int d = 0; d < 4; ++d)
    for (int h = 0; h < 10; ++h) {
      const fs::path header =
          busy / "include" / ("d" + std::to_string(d)) / ("h" + std::to_string(h) + ".h");
      fs::create_directories(header.parent_path());
      std::ofstream(header) << "int v" << h << ";\n";
      stamps.push_back(jitcache::detail::stamp_of(header.string()));
    }
  const std::string set = jitcache::detail::encode_stamps(stamps);

  std::vector<double> by_stat, watching, by_watch, names_only, with_attrib;
  for (int r = 0; r < rounds; ++r) {
    ProvenStamps stat_only(jitcache::detail::probe_filesystem, 1000);
    const Stopwatch stat_proof;
    const bool held_by_stat = stat_only.hold(set);
    by_stat.push_back(stat_proof.ms());

    bool proven = held_by_stat;
    { // its watches are gone before the kernel's own cost is measured below
      ProvenStamps watched(jitcache::detail::probe_filesystem, 0);
      const Stopwatch first;
      proven = watched.hold(set) && proven;
      watching.push_back(first.ms());
      const Stopwatch second;
      proven = watched.hold(set) && proven;
      by_watch.push_back(second.ms());
      proven = proven && watched.stat_checks() == 1;
    }
    if (!proven) {
      std::fprintf(stderr, "bench_proven_stamps: the set was not proven as expected\n");
      fs::remove_all(root);
      return 1;
    }
    names_only.push_back(add_watch_ms(busy, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO));
    with_attrib.push_back(
        add_watch_ms(busy, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB));
  }
  fs::remove_all(root);

  std::printf("40 headers in 4 folders under a folder of %d removed names; medians of %d rounds "
              "(ms)\n\n",
              names, rounds);
  std::printf("| stat | watch | by watch | add_watch, names | add_watch, + IN_ATTRIB |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  std::printf("| %.3f | %.3f | %.4f | %.3f | %.3f |\n", median(by_stat), median(watching),
              median(by_watch), median(names_only), median(with_attrib));
  return 0;
}
