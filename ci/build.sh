#!/usr/bin/env bash
# Configures and builds jitcache in build/ (Release with debug info), with every backend whose
# SDK is found; warnings are errors when CI is set. Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -d /usr/local/cuda/bin && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="$PATH:/usr/local/cuda/bin"   # where the CUDA toolkit installs nvcc
fi
options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [[ -n "${CI:-}" ]]; then
  options+=(-DJITCACHE_WERROR=ON) # CI fails on a warning; a local build only shows it
  # Line tables only (-g1): a failed test's stack still names file and line, and the build
  # took 622 s on 2 cores, against 860 s with -g.
  options+=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
            "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
  # Every target compiled in batches of 8 files (CMake's unity build): most files are small and
  # their time went to parsing the same headers; the library, tools and front-ends took 124 s
  # against 277 s one file at a time. A local build keeps single files, which an edit rebuilds
  # faster.
  options+=(-DCMAKE_UNITY_BUILD=ON)
  # The tests' and the benchmarks' own files without optimisation (JITCACHE_CHECK_FLAGS): the
  # library, tools and front-ends they link stay at -O2. The build took 280 s against 349 s; the
  # tests run no slower (test_core 37.7 s either way).
  options+=(-DJITCACHE_CHECK_FLAGS=-O0)
  # The Debian packages are made from a build for /usr (downstream.deb); CI builds for it once
  # rather than building everything again in the test. Nothing is installed there.
  options+=(-DCMAKE_INSTALL_PREFIX=/usr)
fi
cmake -S . -B build "${options[@]}" "$@"
cmake --build build -j "$(nproc)"
