// The tuning database, backend-neutral: records and their damage, the lookup order, the modes,
// skipped candidates and two processes tuning one problem. The trials here are host functions
// (the OpenCL suite tunes a real kernel on PoCL: tests/opencl/tuning_test.cpp).
#include <jitcache/tuning.hpp>

#include "core/tiers/user/lmdb_store.hpp"
#include "core/tuning/tuning_record.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/fake_clock.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <future>
#include <optional>
#include <random>
#include <thread>

#include <unistd.h>

namespace jitcache::tuning {

using detail::LmdbStore;
namespace {

Family family() {
  Family f;
  f.name = "sum";
  f.parameters = {"TILE", "UNROLL"};
  f.defaults = {{"TILE", "8"}, {"UNROLL", "1"}};
  return f;
}

const Problem k_problem = {{"N", "64"}};
const Device k_device = {"opencl", "test device", {{"device_name", "test"}, {"driver", "1"}}};

Config config_in(const std::filesystem::path& dir, const char* mode = "off") {
  return Config::from_variables({{"JITCACHE_DIR", dir.string()}, {"JITCACHE_TUNE", mode}});
}

// Host trials whose run time grows with |TILE - 32| (TILE=32 is the fastest), and which count
// what was prepared. "bad" values fail to prepare (a compile error); TILE=16 computes a wrong
// answer.
struct HostTrials {
  std::atomic<int> prepared{0};
  Trials trials() {
    Trials t;
    t.candidates = {{{"TILE", "16"}}, {{"TILE", "32"}}, {{"TILE", "bad"}}, {{"TILE", "64"}}};
    t.prepare = [this](const Parameters& p, const std::string& defines) -> Expected<Trial> {
      ++prepared;
      EXPECT_EQ(defines.rfind("-D TILE=", 0), 0u) << defines;
      if (p.at("TILE") == "bad")
        return Error(ErrorCode::compile_failed, "undeclared identifier 'bad'", "log");
      const int tile = std::stoi(p.at("TILE"));
      auto output = std::make_shared<std::string>();
      Trial trial;
      trial.run = [tile, output]() -> Expected<void> {
        detail::clock().sleep_for(std::chrono::microseconds(200 * (1 + std::abs(tile - 32))));
        *output = tile == 16 ? "wrong" : "sum=2016";
        return {};
      };
      trial.output = [output] { return *output; };
      return trial;
    };
    return t;
  }
  // The trials take the time they say on it, and no real time: the tuner's choice and its time
  // limit never depend on how busy the machine is.
  test::FakeClock clock;
};

TuneOptions quick() {
  TuneOptions o;
  o.warmup = 0;
  o.repeats = 1;
  return o;
}

Record sample_record() {
  Record r;
  r.family = "sum";
  r.family_version = 1;
  r.problem = k_problem;
  r.device = k_device;
  r.parameters = {{"TILE", "32"}, {"UNROLL", "1"}};
  r.best_ms = 1.5;
  r.default_ms = 3.25;
  r.when = 1700000000;
  r.jitcache_version = "0.1.0";
  r.candidates = 4;
  r.skipped = 1;
  return r;
}

TEST(TuningRecordTest, RoundTripsAndIsKeyedByFamilyProblemAndDevice) {
  const Record r = sample_record();
  const Digest key = key_of(r);
  EXPECT_EQ(key, record_key(family(), k_problem, k_device));
  auto back = decode_record(key, encode_record(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->family, "sum");
  EXPECT_EQ(back->problem, k_problem);
  EXPECT_EQ(back->device.identity, k_device.identity);
  EXPECT_EQ(back->device.name, "test device");
  EXPECT_EQ(back->parameters, r.parameters);
  EXPECT_DOUBLE_EQ(back->best_ms, 1.5);
  EXPECT_DOUBLE_EQ(back->default_ms, 3.25);
  EXPECT_EQ(back->method, Method::tuned);
  EXPECT_EQ(back->when, 1700000000);
  EXPECT_EQ(back->candidates, 4u);
  EXPECT_EQ(back->skipped, 1u);

  Family other = family();
  other.version = 2;
  EXPECT_NE(record_key(other, k_problem, k_device), key);
  EXPECT_NE(record_key(family(), {{"N", "65"}}, k_device), key);
  Device renamed = k_device;
  renamed.name = "another name";
  EXPECT_EQ(record_key(family(), k_problem, renamed), key);
  Device upgraded = k_device;
  upgraded.identity[1].second = "2";
  EXPECT_NE(record_key(family(), k_problem, upgraded), key);
  EXPECT_EQ(defines(family(), {{"UNROLL", "4"}, {"TILE", "16"}, {"X", "1"}}),
            "-D TILE=16 -D UNROLL=4");
}

// What tune() answers (as_stored) is what a later lookup reads back, bit for bit, for any time:
// a time stored in whole nanoseconds and read back as milliseconds must not lose one on the way
// in again (0.03158 ms is 31579.99... ns as a double: truncated, it was stored as 31579).
TEST(TuningRecordTest, TheAnsweredTimesAreTheStoredTimesExactly) {
  std::mt19937_64 random(20261127);
  std::uniform_int_distribution<std::uint64_t> ns(1, 10'000'000'000ull);
  for (int trial = 0; trial < 20000; ++trial) {
    Record r = sample_record();
    r.best_ms = static_cast<double>(ns(random)) / 1e6;
    r.default_ms = trial == 0 ? 0.03158 : static_cast<double>(ns(random)) / 1e6;
    const Record answered = as_stored(r);
    auto back = decode_record(key_of(r), encode_record(answered));
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->best_ms, answered.best_ms) << trial;
    ASSERT_EQ(back->default_ms, answered.default_ms) << trial;
    ASSERT_EQ(answered.best_ms, r.best_ms) << trial; // whole nanoseconds already
  }
}

TEST(TuningRecordTest, EveryFlippedByteIsRefusedNeverACrash) {
  const Record r = sample_record();
  const Digest key = key_of(r);
  const std::string good = encode_record(r);
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x41);
    auto decoded = decode_record(key, bad);
    ASSERT_FALSE(decoded) << "byte " << i;
    EXPECT_EQ(decoded.error().code, ErrorCode::corrupt);
  }
  for (std::size_t size = 0; size < good.size(); ++size)
    EXPECT_FALSE(decode_record(key, good.substr(0, size))) << size;
  EXPECT_FALSE(decode_record(record_key(family(), {{"N", "1"}}, k_device), good));
}

TEST(TuningTest, LookupPrefersTheUserRecordThenTheHeuristicThenTheDefault) {
  test::TempDir dir;
  Cache cache(config_in(dir.path()));
  Family f = family();
  Choice c = lookup(cache, f, k_problem, k_device);
  EXPECT_EQ(c.origin, Origin::declared);
  EXPECT_EQ(c.parameters, f.defaults);

  f.heuristic = [](const Problem& p, const Device&) -> std::optional<Parameters> {
    if (p.at("N") == "64")
      return Parameters{{"TILE", "16"}}; // UNROLL from the default
    return std::nullopt;
  };
  c = lookup(cache, f, k_problem, k_device);
  EXPECT_EQ(c.origin, Origin::heuristic);
  EXPECT_EQ(c.parameters, (Parameters{{"TILE", "16"}, {"UNROLL", "1"}}));
  EXPECT_EQ(lookup(cache, f, {{"N", "8"}}, k_device).origin, Origin::declared);

  HostTrials host;
  auto tuned = tune(cache, f, k_problem, k_device, host.trials(), quick());
  ASSERT_TRUE(tuned) << tuned.error().message;
  c = lookup(cache, f, k_problem, k_device);
  EXPECT_EQ(c.origin, Origin::user);
  EXPECT_EQ(c.parameters, (Parameters{{"TILE", "32"}, {"UNROLL", "1"}}));
  ASSERT_TRUE(c.record);
  EXPECT_LT(c.record->best_ms, c.record->default_ms);
  // What tune() answered is what the record reads back, to the bit (times in whole ns).
  ASSERT_TRUE(tuned->record);
  EXPECT_EQ(tuned->record->best_ms, c.record->best_ms);
  EXPECT_EQ(tuned->record->default_ms, c.record->default_ms);
  // Another device, or a new version of the kernel: the record does not apply.
  Device other = k_device;
  other.identity[0].second = "other";
  EXPECT_EQ(lookup(cache, f, k_problem, other).origin, Origin::heuristic);
  f.version = 2;
  EXPECT_EQ(lookup(cache, f, k_problem, k_device).origin, Origin::heuristic);

  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.hits(k_tuning_backend, "declared"), 2u);
  EXPECT_EQ(stats.hits(k_tuning_backend, "heuristic"), 3u);
  EXPECT_EQ(stats.hits(k_tuning_backend, "user"), 1u);
  EXPECT_EQ(stats.get(k_tuning_backend, Counter::tuned), 1u);
}

TEST(TuningTest, TuneSkipsCandidatesThatFailToCompileOrAnswerWrong) {
  test::TempDir dir;
  Cache cache(config_in(dir.path()));
  HostTrials host;
  auto tuned = tune(cache, family(), k_problem, k_device, host.trials(), quick());
  ASSERT_TRUE(tuned) << tuned.error().message;
  EXPECT_EQ(host.prepared, 5); // the default and four candidates
  ASSERT_TRUE(tuned->record);
  EXPECT_EQ(tuned->record->candidates, 3u); // the default, 32 and 64
  EXPECT_EQ(tuned->record->skipped, 2u);    // "bad" (compile) and 16 (wrong answer)
  EXPECT_EQ(tuned->parameters.at("TILE"), "32");
  EXPECT_EQ(tuned->record->method, Method::tuned);

  // The default failing is the tuning failing.
  Trials broken = host.trials();
  broken.prepare = [](const Parameters&, const std::string&) -> Expected<Trial> {
    return Error(ErrorCode::compile_failed, "no");
  };
  auto failed = tune(cache, family(), {{"N", "2"}}, k_device, broken, quick());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::compile_failed);
  EXPECT_EQ(lookup(cache, family(), {{"N", "2"}}, k_device).origin, Origin::declared);
}

// A candidate that was fast when timed alone (the default measured first, say, before a GPU
// reached its clocks) but is slower than the default side by side: the runoff keeps the default,
// with the runoff's times. One that stays faster wins with the runoff's times.
TEST(TuningTest, TheRunoffKeepsTheDefaultOverACandidateFastOnlyAlone) {
  test::TempDir dir;
  test::FakeClock clock; // each run takes what it says, exactly
  Cache cache(config_in(dir.path()));
  const auto trials_where = [](int candidate_ms_after_first_run) {
    Trials t;
    t.candidates = {{{"TILE", "32"}}};
    t.prepare = [=](const Parameters& p, const std::string&) -> Expected<Trial> {
      const bool is_default = p.at("TILE") == "8";
      auto runs = std::make_shared<int>(0);
      Trial trial;
      trial.run = [=]() -> Expected<void> { // fast for its own three timed runs
        const int ms = is_default ? 6 : (++*runs <= 3 ? 0 : candidate_ms_after_first_run);
        detail::clock().sleep_for(std::chrono::milliseconds(ms));
        return {};
      };
      return trial;
    };
    return t;
  };
  TuneOptions options = quick();
  options.repeats = 3;
  auto kept = tune(cache, family(), k_problem, k_device, trials_where(20), options);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->parameters, family().defaults);
  ASSERT_TRUE(kept->record);
  EXPECT_EQ(kept->record->best_ms, kept->record->default_ms);
  EXPECT_EQ(kept->record->default_ms, 6.0);
  EXPECT_EQ(kept->record->candidates, 2u);

  auto won = tune(cache, family(), {{"N", "65"}}, k_device, trials_where(0), options);
  ASSERT_TRUE(won) << won.error().message;
  EXPECT_EQ(won->parameters.at("TILE"), "32");
  EXPECT_EQ(won->record->best_ms, 0.0);
  EXPECT_EQ(won->record->default_ms, 6.0);
}

TEST(TuningTest, TheTimeLimitStopsAfterTheDefault) {
  test::TempDir dir;
  Cache cache(config_in(dir.path()));
  HostTrials host;
  TuneOptions options = quick();
  options.time_limit = std::chrono::milliseconds(0);
  auto tuned = tune(cache, family(), k_problem, k_device, host.trials(), options);
  ASSERT_TRUE(tuned);
  EXPECT_EQ(host.prepared, 1);
  EXPECT_EQ(tuned->parameters, family().defaults);
}

TEST(TuningTest, EveryModeDoesWhatItSays) {
  test::TempDir dir;
  Family f = family();
  f.heuristic = [](const Problem&, const Device&) {
    return std::optional<Parameters>(Parameters{{"TILE", "64"}});
  };
  HostTrials host;
  const Trials trials = host.trials();
  {
    Cache cache(config_in(dir.path(), "off"));
    EXPECT_EQ(select(cache, f, k_problem, k_device, trials, std::nullopt, quick()).origin,
              Origin::heuristic);
    EXPECT_EQ(host.prepared, 0);
  }
  {
    Cache cache(config_in(dir.path(), "missing"));
    Choice c = select(cache, f, k_problem, k_device, trials, std::nullopt, quick());
    EXPECT_EQ(c.origin, Origin::user);
    EXPECT_EQ(c.parameters.at("TILE"), "32");
    EXPECT_EQ(host.prepared, 5);
    select(cache, f, k_problem, k_device, trials, std::nullopt, quick()); // tuned once
    EXPECT_EQ(host.prepared, 5);
    EXPECT_EQ(cache.session_stats().get(k_tuning_backend, Counter::tuned), 1u);
  }
  {
    Cache cache(config_in(dir.path(), "all"));
    EXPECT_EQ(select(cache, f, k_problem, k_device, trials, std::nullopt, quick()).origin,
              Origin::user);
    EXPECT_EQ(host.prepared, 5);
    select(cache, f, {{"N", "128"}}, k_device, trials, std::nullopt, quick());
    EXPECT_EQ(host.prepared, 10);
  }
  {
    Cache cache(config_in(dir.path(), "retune"));
    const auto before = lookup(cache, f, k_problem, k_device).record->when;
    select(cache, f, k_problem, k_device, trials, std::nullopt, quick());
    EXPECT_EQ(host.prepared, 15);
    select(cache, f, k_problem, k_device, trials, std::nullopt, quick()); // once per process
    EXPECT_EQ(host.prepared, 15);
    EXPECT_GE(lookup(cache, f, k_problem, k_device).record->when, before);
  }
  {
    Cache cache(config_in(dir.path(), "clean"));
    EXPECT_EQ(select(cache, f, k_problem, k_device, trials, std::nullopt, quick()).origin,
              Origin::heuristic);
    EXPECT_EQ(lookup(cache, f, k_problem, k_device).origin, Origin::heuristic);
    EXPECT_EQ(lookup(cache, f, {{"N", "128"}}, k_device).origin, Origin::user); // not met
    EXPECT_EQ(host.prepared, 15);
  }
  {
    // The API's mode wins over the environment's; an unknown value is off, with a warning.
    Config config = config_in(dir.path(), "exhaustive");
    ASSERT_EQ(config.warnings.size(), 1u);
    EXPECT_EQ(config.tune, TuneMode::off);
    Cache cache(config);
    EXPECT_EQ(select(cache, f, k_problem, k_device, trials, std::nullopt, quick()).origin,
              Origin::heuristic);
    EXPECT_EQ(host.prepared, 15);
    EXPECT_EQ(select(cache, f, k_problem, k_device, trials, TuneMode::missing, quick()).origin,
              Origin::user);
    EXPECT_EQ(host.prepared, 20);
  }
}

TEST(TuningTest, AReadOnlyCacheMeasuresButNeitherKeepsNorTunesOnItsOwn) {
  test::TempDir dir;
  HostTrials host;
  {
    Cache writer(config_in(dir.path()));
    writer.flush(); // the user tier exists
  }
  Config config = config_in(dir.path(), "missing");
  config.read_only = true;
  Cache cache(config);
  EXPECT_EQ(
      select(cache, family(), k_problem, k_device, host.trials(), std::nullopt, quick()).origin,
      Origin::declared);
  EXPECT_EQ(host.prepared, 0);
  auto tuned = tune(cache, family(), k_problem, k_device, host.trials(), quick());
  ASSERT_TRUE(tuned);
  EXPECT_EQ(tuned->parameters.at("TILE"), "32");
  EXPECT_EQ(lookup(cache, family(), k_problem, k_device).origin, Origin::declared);
}

TEST(TuningTest, ADamagedRecordIsACountedMissWithOneWarning) {
  test::TempDir dir;
  const Config config = config_in(dir.path());
  const Digest key = record_key(family(), k_problem, k_device);
  {
    auto store = LmdbStore::open(config.cache_dir, false);
    ASSERT_TRUE(store);
    std::string bytes = encode_record(sample_record());
    bytes[bytes.size() / 2] ^= 0x10;
    ASSERT_TRUE((*store)->put_tuning(key, bytes));
  }
  Cache cache(config);
  testing::internal::CaptureStderr();
  EXPECT_EQ(lookup(cache, family(), k_problem, k_device).origin, Origin::declared);
  EXPECT_EQ(lookup(cache, family(), k_problem, k_device).origin, Origin::declared);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fails its checksum"), std::string::npos) << err;
  EXPECT_EQ(err.find("fails its checksum"), err.rfind("fails its checksum")) << err;
  EXPECT_EQ(cache.session_stats().get(k_tuning_backend, Counter::corrupt), 2u);
  // Tuning replaces it.
  HostTrials host;
  ASSERT_TRUE(tune(cache, family(), k_problem, k_device, host.trials(), quick()));
  EXPECT_EQ(lookup(cache, family(), k_problem, k_device).origin, Origin::user);
}

// Two processes meet the same problem at once: the first holds the tuning lease (it is inside its
// measurements, held there until the second waits for the lease), the second finds no record,
// waits for the lease and takes the first one's record: it prepares nothing.
TEST(TuningTest, TwoProcessesTuneAProblemOnce) {
  test::TempDir dir;
  const Config config = config_in(dir.path());
  { Cache(config).flush(); } // the user tier exists before the processes start
  int go[2] = {-1, -1};      // the parent's word to the first process: the second one waits
  ASSERT_EQ(::pipe(go), 0);
  // Exit status: 10 + the candidates this process prepared, 1 for a wrong choice.
  const auto select_here = [&](bool first) {
    // The first one's trials take the time they say (TILE=32 is the faster); the second one
    // says when it starts waiting for the lease.
    std::optional<test::FakeClock> fake;
    std::optional<test::ReportingClock> reporting;
    if (first)
      fake.emplace();
    else
      reporting.emplace([] { test::ChildProcess::tell_parent("waiting"); });
    Cache cache(config);
    std::atomic<int> prepared{0};
    bool heard = false; // the parent's word
    Trials trials;
    trials.candidates = {{{"TILE", "32"}}};
    trials.prepare = [&](const Parameters& p, const std::string&) -> Expected<Trial> {
      ++prepared;
      const bool fast = p.at("TILE") == "32";
      return Trial{[&, fast]() -> Expected<void> {
                     if (first && !fast && !heard) { // its first run
                       heard = true;
                       test::ChildProcess::tell_parent("tuning"); // the lease is held
                       char word = 0;
                       if (::read(go[0], &word, 1) != 1)
                         return Error(ErrorCode::io_error, "no word from the parent");
                     }
                     detail::clock().sleep_for(std::chrono::milliseconds(fast ? 100 : 200));
                     return {};
                   },
                   {}};
    };
    if (!first)
      test::ChildProcess::tell_parent("selecting");
    const Choice choice =
        select(cache, family(), k_problem, k_device, trials, TuneMode::missing, quick());
    return choice.parameters.at("TILE") == "32" ? 10 + prepared.load() : 1;
  };
  test::ChildProcess a([&] { return select_here(true); });
  ASSERT_EQ(a.next_message(), "tuning") << a.err();
  test::ChildProcess b([&] { return select_here(false); });
  ASSERT_EQ(b.next_message(), "selecting") << b.err();
  ASSERT_EQ(b.next_message(), "waiting") << b.err(); // found no record, and the lease taken
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  EXPECT_EQ(a.wait(), 12) << a.err(); // tuned: the default and TILE=32
  EXPECT_EQ(b.wait(), 10) << b.err(); // waited, and read the record
  Cache cache(config);
  EXPECT_EQ(lookup(cache, family(), k_problem, k_device).origin, Origin::user);
  ::close(go[0]);
  ::close(go[1]);
}

TEST(TuningTest, WithoutWaitingAnotherTunerMeansTheLookupAnswer) {
  test::TempDir dir;
  const Config config = config_in(dir.path());
  Cache cache(config);
  cache.flush();
  HostTrials host;
  std::promise<void> inside, release;
  Trials slow;
  slow.prepare = [&](const Parameters&, const std::string&) -> Expected<Trial> {
    inside.set_value(); // the lease is held
    release.get_future().wait();
    return Trial{[]() -> Expected<void> { return {}; }, {}};
  };
  std::thread tuner(
      [&] { EXPECT_TRUE(tune(cache, family(), k_problem, k_device, slow, quick())); });
  inside.get_future().wait();
  TuneOptions no_wait = quick();
  no_wait.wait = false;
  auto other = tune(cache, family(), k_problem, k_device, host.trials(), no_wait);
  release.set_value();
  tuner.join();
  ASSERT_TRUE(other);
  EXPECT_EQ(other->origin, Origin::declared);
  EXPECT_EQ(host.prepared, 0);
}

// Timed runs on one device never overlap, whichever problems are tuned at once: two threads
// (each on its own descriptor of the device's measuring lock, as two processes would be) tune
// different problems, and every run checks that no other run is under way.
TEST(TuningTest, TimedRunsOnADeviceNeverOverlapAcrossTunings) {
  test::TempDir dir;
  Cache cache(config_in(dir.path()));
  cache.flush();
  std::atomic<int> running{0}, overlaps{0}, runs{0};
  Trials trials;
  trials.candidates = {{{"TILE", "16"}}, {{"TILE", "32"}}, {{"TILE", "64"}}};
  // The default (TILE=8) is the slowest, so each tuning ends with a runoff.
  trials.prepare = [&](const Parameters& p, const std::string&) -> Expected<Trial> {
    const auto ms = std::chrono::milliseconds(p.at("TILE") == "8" ? 6 : 3);
    return Trial{[&, ms]() -> Expected<void> {
                   if (running++ != 0)
                     ++overlaps;
                   ++runs;
                   std::this_thread::sleep_for(ms);
                   --running;
                   return {};
                 },
                 {}};
  };
  TuneOptions options;
  options.warmup = 1;
  options.repeats = 3;
  const auto tune_size = [&](const char* n) {
    EXPECT_TRUE(tune(cache, family(), {{"N", n}}, k_device, trials, options));
  };
  std::thread a(tune_size, "64"), b(tune_size, "128");
  a.join();
  b.join();
  // Two problems: four candidates, warm-up and three repeats; then the runoff of two.
  EXPECT_EQ(runs, 2 * (4 * 4 + 2 * 4));
  EXPECT_EQ(overlaps, 0);
}

// JITCACHE_RECORD: each problem a process meets is one line of the record, beside the kernel
// requests, with select()'s candidates; `jitcache warm` passes over such lines in silence, and
// read_problem() reads them back (and refuses what is not one).
TEST(TuningRecordTest, ProblemsMetAreRecordedOnceWithTheirCandidates) {
  test::TempDir dir;
  const auto record = dir.path() / "record.jsonl";
  Config config = config_in(dir.path() / "cache");
  config.record = record;
  {
    Cache cache(config);
    lookup(cache, family(), k_problem, k_device);
    lookup(cache, family(), k_problem, k_device);
    HostTrials host;
    select(cache, family(), {{"N", "128"}}, k_device, host.trials());
  }
  const auto lines = test::file_lines(record);
  ASSERT_EQ(lines.size(), 2u);
  auto first = read_problem(lines[0]);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->family, "sum");
  EXPECT_EQ(first->family_version, 1u);
  EXPECT_EQ(first->problem, k_problem);
  EXPECT_EQ(first->backend, "opencl");
  EXPECT_EQ(first->device, "test device");
  EXPECT_TRUE(first->candidates.empty());
  auto second = read_problem(lines[1]);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->problem, (Problem{{"N", "128"}}));
  ASSERT_EQ(second->candidates.size(), 4u);
  EXPECT_EQ(second->candidates[1], (Parameters{{"TILE", "32"}}));

  const auto warmed =
      test::run_cli({"warm", record.string()}, {{"JITCACHE_DIR", (dir.path() / "warm").string()}});
  EXPECT_EQ(warmed.exit_code, 0) << warmed.err;
  EXPECT_EQ(warmed.err.find("skipped"), std::string::npos) << warmed.err;
  EXPECT_NE(warmed.err.find("holds no request"), std::string::npos) << warmed.err;

  nlohmann::json other_format = nlohmann::json::parse(lines[0]);
  other_format["format"] = 99;
  for (const auto& [line, why] : std::vector<std::pair<std::string, std::string>>{
           {"{\"format\": 1, \"key\": \"ab\", \"backend\": \"opencl\"}", "\"kind\""},
           {lines[0].substr(0, lines[0].size() / 2), "not a tuning problem's line"},
           {other_format.dump(), "format 99"}}) {
    const auto refused = read_problem(line);
    ASSERT_FALSE(refused) << line;
    EXPECT_EQ(refused.error().code, ErrorCode::corrupt);
    EXPECT_NE(refused.error().message.find(why), std::string::npos) << refused.error().message;
  }
}

// Records travel in packages as kernels do: exported from one user tier, they answer from the
// system tier of another (under its own records), count as tuned for `missing` but not for
// `all`, and import into a user tier.
TEST(TuningPackageTest, ExportedRecordsAnswerFromTheSystemTierUnderTheUserTier) {
  test::TempDir dir;
  const auto maker = dir.path() / "maker", user = dir.path() / "user", other = dir.path() / "other";
  const auto package = dir.path() / "tuning-opencl-test_device.jcpkg";
  {
    auto store = LmdbStore::open(config_in(maker).cache_dir, false);
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->put_tuning(key_of(sample_record()), encode_record(sample_record())));
  }
  const std::map<std::string, std::string> maker_env = {{"JITCACHE_DIR", maker.string()}};
  auto refused = test::run_cli(
      {"export", "-o", package.string(), "--backend", "tuning", "--device", "0"}, maker_env);
  EXPECT_EQ(refused.exit_code, 2) << "a usage error";
  EXPECT_NE(refused.err.find("--arch <backend>-<device name>"), std::string::npos) << refused.err;
  auto exported = test::run_cli({"export", "-o", package.string(), "--backend", "tuning", "--arch",
                                 "opencl-test device", "--json"},
                                maker_env);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const auto line = test::json_lines(exported.out).at(0);
  EXPECT_EQ(line.at("entries"), 1);
  EXPECT_EQ(line.at("target"), "opencl-test device");
  EXPECT_EQ(line.at("suggested_name"), package.filename().string());

  const auto config = [&](const std::filesystem::path& dir, const char* mode) {
    return Config::from_variables({{"JITCACHE_DIR", dir.string()},
                                   {"JITCACHE_SYSTEM_PATH", package.string()},
                                   {"JITCACHE_TUNE", mode}});
  };
  Family f = family();
  f.heuristic = [](const Problem&, const Device&) {
    return std::optional<Parameters>(Parameters{{"TILE", "64"}});
  };
  HostTrials host;
  {
    Cache cache(config(user, "missing"));
    Choice c = lookup(cache, f, k_problem, k_device);
    EXPECT_EQ(c.origin, Origin::system);
    EXPECT_EQ(c.parameters, (Parameters{{"TILE", "32"}, {"UNROLL", "1"}}));
    ASSERT_TRUE(c.record);
    EXPECT_DOUBLE_EQ(c.record->default_ms, 3.25);
    EXPECT_EQ(select(cache, f, k_problem, k_device, host.trials()).origin, Origin::system);
    EXPECT_EQ(host.prepared, 0); // a package's record counts as tuned for `missing`
    // Another problem: no package has it, so the heuristic answers.
    EXPECT_EQ(lookup(cache, f, {{"N", "128"}}, k_device).origin, Origin::heuristic);
    EXPECT_EQ(cache.session_stats().hits(k_tuning_backend, "system"), 2u);
  }
  {
    Cache cache(config(user, "all")); // ignores the packages: tunes, and the user record wins
    EXPECT_EQ(select(cache, f, k_problem, k_device, host.trials()).origin, Origin::user);
    EXPECT_EQ(host.prepared, 5);
    EXPECT_EQ(lookup(cache, f, k_problem, k_device).origin, Origin::user);
  }
  // Imported, the record is the user tier's own, marked as measured elsewhere (`system`); a
  // user tier that measured the problem itself keeps its record.
  const std::map<std::string, std::string> other_env = {{"JITCACHE_DIR", other.string()}};
  auto imported = test::run_cli({"import", package.string(), "--json"}, other_env);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(test::json_lines(imported.out).at(0).at("imported"), 1);
  EXPECT_EQ(test::json_lines(imported.out).at(0).at("kept"), 0);
  {
    Cache cache(Config::from_variables({{"JITCACHE_DIR", other.string()}}));
    const Choice c = lookup(cache, f, k_problem, k_device);
    EXPECT_EQ(c.origin, Origin::user);
    ASSERT_TRUE(c.record);
    EXPECT_EQ(c.record->method, Method::system);
    EXPECT_EQ(c.parameters.at("TILE"), "32");
    EXPECT_DOUBLE_EQ(c.record->default_ms, 3.25);
  }
  const auto listed = test::run_cli({"tune", "list", "--json"}, other_env);
  EXPECT_EQ(test::json_lines(listed.out).at(0).at("method"), "system") << listed.out;
  const std::map<std::string, std::string> user_env = {{"JITCACHE_DIR", user.string()}};
  Record own;
  {
    Cache cache(Config::from_variables(user_env));
    const Choice c = lookup(cache, f, k_problem, k_device);
    ASSERT_TRUE(c.record);
    own = *c.record;
  }
  auto again = test::run_cli({"import", package.string(), "--json"}, user_env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(test::json_lines(again.out).at(0).at("imported"), 0);
  EXPECT_EQ(test::json_lines(again.out).at(0).at("kept"), 1);
  {
    Cache cache(Config::from_variables(user_env));
    const Choice c = lookup(cache, f, k_problem, k_device);
    ASSERT_TRUE(c.record);
    EXPECT_EQ(c.record->method, Method::tuned);
    EXPECT_EQ(c.parameters, own.parameters);
    EXPECT_EQ(c.record->when, own.when);
  }

  // Every byte of the package flipped in turn: the answer is the record, or (the package or
  // its entry refused) the heuristic; never other parameters, never a crash.
  std::ifstream in(package, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto damaged = dir.path() / "damaged.jcpkg";
  int refused_count = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string copy = bytes;
    copy[i] = static_cast<char>(copy[i] ^ 0x5a);
    std::ofstream(damaged, std::ios::binary | std::ios::trunc) << copy;
    testing::internal::CaptureStderr();
    Cache cache(Config::from_variables({{"JITCACHE_DIR", (dir.path() / "flips").string()},
                                        {"JITCACHE_SYSTEM_PATH", damaged.string()}}));
    const Choice c = lookup(cache, f, k_problem, k_device);
    testing::internal::GetCapturedStderr();
    if (c.origin == Origin::system) {
      EXPECT_EQ(c.parameters.at("TILE"), "32") << "byte " << i;
    } else {
      EXPECT_EQ(c.origin, Origin::heuristic) << "byte " << i;
      ++refused_count;
    }
  }
  EXPECT_GT(refused_count, static_cast<int>(bytes.size() / 2));
}

TEST(TuningCliTest, ListsShowsExportsAndClearsTheRecords) {
  test::TempDir dir;
  const std::map<std::string, std::string> env = {{"JITCACHE_DIR", dir.path().string()}};
  Record good = sample_record();
  Record other = sample_record();
  other.problem = {{"N", "128"}};
  const Digest damaged_key = record_key(family(), {{"N", "1"}}, k_device);
  {
    auto store = LmdbStore::open(config_in(dir.path()).cache_dir, false);
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->put_tuning(key_of(good), encode_record(good)));
    ASSERT_TRUE((*store)->put_tuning(key_of(other), encode_record(other)));
    ASSERT_TRUE((*store)->put_tuning(damaged_key, "not a record"));
  }
  auto listed = test::run_cli({"tune", "list", "--json"}, env);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto lines = test::json_lines(listed.out);
  ASSERT_EQ(lines.size(), 3u) << listed.out;
  int valid = 0;
  for (const auto& line : lines) {
    if (line.at("valid")) {
      ++valid;
      EXPECT_EQ(line.at("family"), "sum");
      EXPECT_EQ(line.at("parameters").at("TILE"), "32");
      EXPECT_DOUBLE_EQ(line.at("default_ms").get<double>(), 3.25);
    } else {
      EXPECT_EQ(line.at("key"), damaged_key.hex());
    }
  }
  EXPECT_EQ(valid, 2);

  auto shown = test::run_cli({"tune", "show", key_of(good).hex().substr(0, 12), "--json"}, env);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto whole = test::json_lines(shown.out);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].at("identity").at("device_name"), "test");
  EXPECT_EQ(whole[0].at("skipped"), 1);

  const auto file = dir.path() / "records.jsonl";
  auto exported = test::run_cli({"tune", "export", "-o", file.string()}, env);
  EXPECT_EQ(exported.exit_code, 1); // the damaged one is named, the others written
  EXPECT_NE(exported.err.find("1 damaged tuning record"), std::string::npos) << exported.err;
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(test::json_lines(text).size(), 2u) << text;

  auto one = test::run_cli({"tune", "clear", damaged_key.hex(), "--json"}, env);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(test::json_lines(one.out).at(0).at("cleared"), 1);
  auto rest = test::run_cli({"tune", "clear", "--json"}, env);
  EXPECT_EQ(test::json_lines(rest.out).at(0).at("cleared"), 2);
  EXPECT_EQ(test::run_cli({"tune", "list"}, env).out, "");

  {
    Cache cache(config_in(dir.path()));
    lookup(cache, family(), k_problem, k_device);
  } // the counters are written to the user tier
  bool seen = false;
  for (const auto& line : test::json_lines(test::run_cli({"stats", "--json"}, env).out))
    if (line.at("backend") == "tuning") {
      seen = true;
      EXPECT_EQ(line.at("lookups_by_origin").at("declared"), 1);
    }
  EXPECT_TRUE(seen);
}

} // namespace
} // namespace jitcache::tuning
