// One measurement of getting a HIP code object through the cache, compile-only (no GPU), in this
// fresh process, printed as one JSON line. compare.py runs it many times and reports medians.
//
//   bench_hip cold|warm|warm-loaded TARGET KERNEL.hip [NAME_EXPRESSION...]
//       Cache (from the environment: JITCACHE_DIR) + hip::compile(TARGET). cold expects an empty
//       cache (hipRTC compiles), warm a filled one (lookup, read, verify). warm-loaded opens
//       libamdhip64 and comgr before the clock starts, as a HIP application already has them.
#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_key.hpp"
#include "core/support/clock.hpp"

#include <jitcache/hip.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

using namespace jitcache;
using jitcache::detail::Stopwatch;

[[noreturn]] void die(const std::string& message) {
  std::cerr << "bench_hip: " << message << "\n";
  std::exit(1);
}

hip::Program program_of(const std::string& file, int argc, char** argv) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    die("cannot read " + file);
  std::ostringstream buf;
  buf << in.rdbuf();
  hip::Program program;
  program.source = buf.str();
  program.name = file.substr(file.rfind('/') + 1);
  for (int i = 4; i < argc; ++i)
    program.name_expressions.emplace_back(argv[i]);
  return program;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 4)
    die("usage: bench_hip cold|warm|warm-loaded TARGET KERNEL.hip [NAME_EXPRESSION...]");
  const std::string mode = argv[1], target = argv[2];
  if (mode != "cold" && mode != "warm" && mode != "warm-loaded")
    die("unknown mode " + mode);
  const hip::Program program = program_of(argv[3], argc, argv);
  if (mode == "warm-loaded" && !hip::toolchain_fields())
    die("libamdhip64 or comgr cannot be opened");

  const Stopwatch clock;
  Cache cache;
  auto code = hip::compile(cache, target, program);
  if (!code)
    die(code.error().message + "\n" + code.error().log);
  const double ms = clock.ms();
  const BuildInfo& info = code->info;
  std::printf("{\"mode\": \"%s\", \"target\": \"%s\", \"ms\": %.4f, \"outcome\": \"%s\", "
              "\"tier\": \"%s\", \"compile_ms\": %.4f, \"bytes\": %llu}\n",
              mode.c_str(), code->target.c_str(), ms, to_string(info.outcome), info.tier.c_str(),
              info.compile_ms, static_cast<unsigned long long>(info.bytes));
  return 0;
}
