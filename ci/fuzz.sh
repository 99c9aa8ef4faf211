#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) with clang in build-fuzz and runs each for a bounded
# time: any crash, sanitizer report or broken invariant fails. Usage: ci/fuzz.sh [SECONDS]
# (default 60), on every core at once (libFuzzer's fork mode: one process per core, a crash in
# any ends the run and fails it), so that the machine's cores fuzz SECONDS each. The corpus starts
# from seed packages each run (build-fuzz/tests/fuzz/corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJITCACHE_FUZZ=ON \
  -DJITCACHE_FUZZ_SECONDS="$seconds" -DJITCACHE_FUZZ_JOBS="$(nproc)" -DJITCACHE_BUILD_TESTS=OFF \
  -DJITCACHE_BUILD_BENCH=OFF -DJITCACHE_PYTHON=OFF -DJITCACHE_WITH_OPENCL=OFF \
  -DJITCACHE_WITH_CUDA=OFF -DJITCACHE_WITH_HIP=OFF
cmake --build build-fuzz --target fuzz_package_reader -j "$(nproc)"
rm -rf build-fuzz/tests/fuzz/corpus
ci/ctest.sh build-fuzz -L fuzz --output-on-failure
