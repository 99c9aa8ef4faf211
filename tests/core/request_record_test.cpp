// The request record (core/record/request_record), its writer (core/record/request_log) and what a
// replay checks and rewrites (core/record/request_replay).
#include "core/record/request_log.hpp"
#include "core/record/request_record.hpp"
#include "core/record/request_replay.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sys/stat.h>

namespace jitcache {
namespace {

namespace fs = std::filesystem;

Key key_with(const std::string& header_content, const std::string& nvrtc = "12.4") {
  return KeyBuilder("cuda")
      .device("target_arch", "sm_90")
      .toolchain("nvrtc_version", nvrtc)
      .options("-DN=4")
      .source("k()", "program_name")
      .header("common.h", header_content, "/src/common.h")
      .finish();
}

detail::RequestRecord sample() {
  detail::RequestRecord record;
  record.backend = "cuda";
  record.device = "sm_90";
  record.options = {"-DN=4", "-I", "dir"};
  record.directory = "/work";
  record.source = "#include \"common.h\"\nk()";
  record.key = std::string(64, 'a');
  record.variables = {{"JITCACHE_DIR", "/c"}};
  record.name = "k.cu";
  record.name_expressions = {"k<float>"};
  record.headers = {{"common.h", "#define X 1\n", "/src/common.h"}};
  record.identity = {{"target_arch", "sm_90"}};
  record.toolchain = {{"nvrtc_version", "12.4"}};
  return record;
}

TEST(RequestRecord, EveryFieldSurvivesALine) {
  const detail::RequestRecord record = sample();
  const std::string line = detail::encode_request(record);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = detail::decode_request(line);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->backend, record.backend);
  EXPECT_EQ(back->options, record.options);
  EXPECT_EQ(back->name, record.name);
  EXPECT_EQ(back->name_expressions, record.name_expressions);
  ASSERT_EQ(back->headers.size(), 1u);
  EXPECT_EQ(back->headers[0].content, "#define X 1\n");
  EXPECT_EQ(back->headers[0].path, "/src/common.h");
  EXPECT_EQ(back->identity, record.identity);
  EXPECT_EQ(back->toolchain, record.toolchain);
  EXPECT_EQ(back->variables, record.variables);
  EXPECT_EQ(back->key, record.key);
}

TEST(RequestRecord, AnotherFormatOrAMissingFieldIsRefusedWithWhy) {
  auto other = detail::decode_request(R"({"format": 2, "backend": "cuda"})");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("format 2"), std::string::npos) << other.error().message;
  auto partial = detail::decode_request(R"({"format": 1, "backend": "cuda"})");
  ASSERT_FALSE(partial);
  EXPECT_EQ(partial.error().code, ErrorCode::corrupt);
  EXPECT_FALSE(detail::decode_request("{not json"));
}

TEST(RequestLog, EachKeyIsWrittenOnceWithTheKeysFieldsAndPrivately) {
  test::TempDir dir;
  Config config;
  config.record = dir.path() / "record.jsonl";
  const Key key = key_with("#define X 1\n");
  int described = 0;
  const auto describe = [&] {
    ++described;
    return sample();
  };
  detail::record_request(config, key, describe);
  detail::record_request(config, key, describe);
  EXPECT_EQ(described, 1) << "described only when written";
  const auto lines = test::file_lines(config.record);
  ASSERT_EQ(lines.size(), 1u);
  auto record = detail::decode_request(lines[0]);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->key, key.digest.hex());
  EXPECT_EQ(record->identity.at("target_arch"), "sm_90");
  EXPECT_EQ(record->toolchain.at("nvrtc_version"), "12.4");
  ASSERT_EQ(record->headers.size(), 1u);
  EXPECT_EQ(record->headers[0].name, "common.h");
  EXPECT_EQ(record->headers[0].path, "/src/common.h");
  struct stat st {};
  ASSERT_EQ(stat(config.record.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(RequestLog, ASymlinkIsNotFollowedAndNothingFails) {
  test::TempDir dir;
  Config config;
  config.record = dir.path() / "record.jsonl";
  fs::create_symlink(dir.path() / "target.jsonl", config.record);
  detail::record_request(config, key_with("other\n"), sample);
  EXPECT_FALSE(fs::exists(dir.path() / "target.jsonl"));
}

TEST(RequestReplay, AKeyThatDiffersSaysWhichFieldsDo) {
  const Key recorded = key_with("#define X 1\n");
  detail::RequestRecord record = sample();
  record.key = recorded.digest.hex();
  EXPECT_TRUE(detail::check_replayed_key(record, recorded));
  auto other = detail::check_replayed_key(record, key_with("#define X 2\n", "12.6"));
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("nvrtc_version 12.4 is now 12.6"), std::string::npos)
      << other.error().message;
  EXPECT_NE(other.error().message.find("header common.h has other content than recorded"),
            std::string::npos)
      << other.error().message;
}

// A record keeps the key schema its key was made with; one written before the field existed
// reads as schema 1. Replayed by a jitcache of another schema, it says so, not "the source or
// options differ".
TEST(RequestReplay, ARecordOfAnotherKeySchemaSaysSoWhenReplayed) {
  detail::RequestRecord record = sample();
  const Key key = key_with("#define X 1\n");
  record.key = key.digest.hex();
  auto again = detail::decode_request(detail::encode_request(record));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->key_schema, k_key_schema_version);
  EXPECT_TRUE(detail::check_replayed_key(*again, key));

  auto line = nlohmann::json::parse(detail::encode_request(record));
  line.erase("key_schema");
  record.key = std::string(64, 'a'); // what an older jitcache made
  line["key"] = record.key;
  auto older = detail::decode_request(line.dump());
  ASSERT_TRUE(older);
  EXPECT_EQ(older->key_schema, 1);
  auto replayed = detail::check_replayed_key(*older, key);
  ASSERT_FALSE(replayed);
  EXPECT_NE(replayed.error().message.find("keys have schema 1; this one makes schema " +
                                          std::to_string(k_key_schema_version)),
            std::string::npos)
      << replayed.error().message;
}

TEST(RequestReplay, IncludePathsPointToTheWrittenHeadersAndKeepTheirCount) {
  test::TempDir dir;
  detail::RequestRecord record = sample();
  record.headers.push_back({"sub/inner.h", "inner\n", "/src/sub/inner.h"});
  record.headers.push_back({"../escape.h", "no\n", "/escape.h"});
  record.headers.push_back({"#include MACRO: x.h", "no\n", "/x.h"});
  ASSERT_TRUE(detail::write_headers(record, dir.path()));
  EXPECT_TRUE(fs::exists(dir.path() / "common.h"));
  EXPECT_TRUE(fs::exists(dir.path() / "sub" / "inner.h"));
  EXPECT_FALSE(fs::exists(dir.path().parent_path() / "escape.h"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 2);
  EXPECT_EQ(detail::options_including("-I a -DX=1 -Ib \"-DS=a b\"", "/t"),
            "-I /t -DX=1 -I/t \"-DS=a b\"");
}

} // namespace
} // namespace jitcache
