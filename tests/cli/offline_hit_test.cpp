// An offline hit (`jitcache build --arch`, `jitcache warm`) of a request made before takes its
// key from the remembered manifest: it opens none of the toolkit's headers the key was built
// from (a CUB kernel's are hundreds). Opens are counted by the kernel (inotify), in the real CLI.
#include "tests/support/json_lines.hpp"
#include "tests/support/open_count.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

namespace jitcache {
namespace {

namespace fs = std::filesystem;
using test::json_lines;
using test::names;
using test::OpenCount;
using test::run_cli;

// The opens of `opened` whose name holds `part`: other processes on the machine (compilers of
// other projects) open the toolkit's common headers too, but none of these.
std::map<std::string, int> only(const std::map<std::string, int>& opened, const std::string& part) {
  std::map<std::string, int> out;
  for (const auto& [name, count] : opened)
    if (name.find(part) != std::string::npos)
      out.emplace(name, count);
  return out;
}

// The current directory, changed for the life of the object.
class ScopedDirectory {
public:
  explicit ScopedDirectory(const fs::path& dir) : m_old(fs::current_path()) {
    fs::current_path(dir);
  }
  ~ScopedDirectory() { fs::current_path(m_old); }
  ScopedDirectory(const ScopedDirectory&) = delete;
  ScopedDirectory& operator=(const ScopedDirectory&) = delete;

private:
  fs::path m_old;
};

TEST(OfflineHitTest, CudaBuildAndWarmOfARequestMadeBeforeOpenNoToolkitHeader) {
#ifndef JITCACHE_TEST_CUDA_INCLUDE_DIR
  GTEST_SKIP() << "CUDA backend not built";
#else
  test::TempDir cache, files;
  const fs::path record = files.path() / "record.jsonl";
  // The kernel includes a toolkit header that nothing else here does; the toolkit's files are old
  // enough for their stamps to vouch for them. It is built from a current directory that was
  // just made (and that warm's scratch folder changes): names absent there are vouched for one
  // by one, not by the folder's stamp, which would be too recent to remember anything.
  const std::string header = "cuda_awbarrier";
  std::ofstream(files.path() / "probe.cu")
      << "#include <cuda_awbarrier_primitives.h>\n"
         "extern \"C\" __global__ void probe(int* out) { *out = 1; }\n";
  const ScopedDirectory in(files.path());
  const std::map<std::string, std::string> env{{"JITCACHE_DIR", cache.path().string()}};
  OpenCount toolkit(JITCACHE_TEST_CUDA_INCLUDE_DIR);
  ASSERT_TRUE(toolkit.watching());
  // Only the first request is recorded: a recording process reads the headers (a record holds
  // them by content).
  const auto build = [&](bool recording) {
    std::vector<std::string> args{"build", "--backend", "cuda", "--arch", "sm_80", "--json"};
    if (recording)
      args.insert(args.end(), {"--record", record.string()});
    args.push_back("probe.cu");
    auto built = run_cli(args, env);
    EXPECT_EQ(built.exit_code, 0) << built.err;
    return built.exit_code == 0 ? json_lines(built.out).at(0) : nlohmann::json{};
  };

  const auto first = build(true);
  EXPECT_EQ(first["outcome"], "miss");
  EXPECT_FALSE(only(toolkit.take(), header).empty())
      << "the first request reads the header (the watch sees it)";
  for (int run = 0; run < 2; ++run) {
    const auto again = build(false);
    EXPECT_EQ(again["outcome"], "hit");
    EXPECT_EQ(again["key"], first["key"]);
    const auto opened = only(toolkit.take(), header);
    EXPECT_TRUE(opened.empty()) << "build hit " << run << " opened " << names(opened);
  }

  auto warmed = run_cli({"warm", record.string(), "--arch", "sm_80", "--json"}, env);
  ASSERT_EQ(warmed.exit_code, 0) << warmed.out << warmed.err;
  EXPECT_EQ(json_lines(warmed.out).at(0)["outcome"], "hit") << warmed.out;
  const auto opened = only(toolkit.take(), header);
  EXPECT_TRUE(opened.empty()) << "warm of a request made before opened " << names(opened);
#endif
}

// A record line written by a process whose key was recalled from the manifest (it has no header
// fields) still holds every header by content.
TEST(OfflineHitTest, CudaRequestsRecordedOnHitsHoldTheirHeaders) {
#ifndef JITCACHE_TEST_CUDA_INCLUDE_DIR
  GTEST_SKIP() << "CUDA backend not built";
#else
  test::TempDir cache, files;
  const fs::path record = files.path() / "record.jsonl";
  const std::string kernel = std::string(JITCACHE_KERNELS) + "/transpose.cu";
  for (int run = 0; run < 3; ++run) {
    auto built = run_cli(
        {"build", "--backend", "cuda", "--arch", "sm_80", "--record", record.string(), kernel},
        {{"JITCACHE_DIR", cache.path().string()}});
    ASSERT_EQ(built.exit_code, 0) << built.err;
  }
  const auto lines = test::file_lines(record);
  ASSERT_EQ(lines.size(), 3u) << "each process records its request once";
  for (const std::string& line : lines)
    EXPECT_GT(nlohmann::json::parse(line)["headers"].size(), 100u) << line.substr(0, 300);
#endif
}

} // namespace
} // namespace jitcache
