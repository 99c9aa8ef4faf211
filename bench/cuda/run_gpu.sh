#!/usr/bin/env bash
# Builds the CUDA backend on a machine with an NVIDIA GPU, runs its tests (and the Python module's
# CUDA tests, with CuPy, when pybind11 is there) and the benchmark, and
# writes everything to $OUT (default ./out): run_gpu.log, ctest.txt, test_cuda.txt, info.txt,
# bench.md (the Markdown table), bench_raw.jsonl, bench_tuning.md (the tuning example's table).
#
# usage (from the repository root): bench/cuda/run_gpu.sh   (RUNS=N: N fresh processes per column, default 21)
# PARTS: the parts after the build, default "tests python bench tuning warm" (warm: `jitcache warm`
# throughput against --jobs on this machine's cores, bench/core/warm_jobs.py, into warm_jobs.md).
# Needs CUDA 13 (NVRTC), cmake, and the core's dependencies; says which are missing. Where lmdb,
# xxhash or hiredis lack their -dev packages, a git-ignored build-deps/ (include/, lib/*.a built
# with -fPIC, since libjitcache is a shared library, lib/pkgconfig/*.pc with
# prefix=${pcfiledir}/../.., and the CMake package files of the header-only dependencies, GoogleTest
# and OpenSSL where the machine lacks them) copied from another machine stands in.
set -u
OUT=${OUT:-$PWD/out}
PARTS=" ${PARTS:-tests python bench tuning warm} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
BUILD=${BUILD:-build-gpu}
mkdir -p "$OUT"
exec > >(tee "$OUT/run_gpu.log") 2>&1

section() { printf '\n== %s\n' "$*"; }

section machine
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "no nvidia-smi"
echo "cpus: $(nproc)"
cmake --version | head -1
if python3 -c 'import cupy; print("cupy", cupy.__version__)'; then cupy=yes; else cupy=no; fi

section dependencies
# Each required by the top-level CMakeLists.txt; GTest only for the tests.
has_cmake_package() { # name: a <name>Config.cmake or <name>-config.cmake somewhere cmake looks
  find /usr /usr/local /opt "$deps" -ipath "*cmake*" \( -iname "$1Config.cmake" -o -iname "$1-config.cmake" \) \
    -print -quit 2>/dev/null | grep -q .
}
# Headers and static libraries carried in build-deps/ stand in for what the machine lacks.
deps=${JITCACHE_DEPS:-$PWD/build-deps}
if { ! pkg-config --exists lmdb || ! pkg-config --exists libxxhash || ! pkg-config --exists hiredis; } &&
  [ -d "$deps/lib/pkgconfig" ]; then
  echo "lmdb, libxxhash or hiredis missing here: using the copies carried in $deps"
  export PKG_CONFIG_PATH="$deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi
missing=()
pkg-config --exists lmdb || missing+=("lmdb (liblmdb-dev)")
pkg-config --exists libxxhash || missing+=("libxxhash (libxxhash-dev)")
pkg-config --exists hiredis || missing+=("hiredis (libhiredis-dev)")
pkg-config --exists libcrypto || missing+=("OpenSSL (libssl-dev)")
has_cmake_package nlohmann_json || missing+=("nlohmann_json (nlohmann-json3-dev)")
has_cmake_package CLI11 || missing+=("CLI11 (libcli11-dev)")
tests=ON
tests_failed=no
if ! has_cmake_package GTest; then
  echo "GoogleTest (libgtest-dev) missing: building without the tests"
  tests=OFF
fi
if ((${#missing[@]})); then
  printf 'missing, required by the core: %s\n' "${missing[@]}"
  exit 1
fi
echo "all found (tests: $tests, cupy: $cupy)"

section configure and build
# pybind11 for the Python module: installed, or its headers and CMake files in build-deps.
[ -d "$deps" ] && export CMAKE_PREFIX_PATH="$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
# The module is on by default and a missing pybind11 fails configure: ask for it only when the
# python part runs and pybind11 is there (the pybind11 package of this python3, as pip installs
# it, or its CMake files), and configure without it when the module's configure fails all the same
# (Python's headers missing), so that the tests and the benchmark still run.
python_opts=(-DJITCACHE_PYTHON=OFF)
if part python; then
  if pybind11_dir=$(python3 -m pybind11 --cmakedir 2>/dev/null) && [ -d "$pybind11_dir" ]; then
    python_opts=(-DJITCACHE_PYTHON=ON -Dpybind11_DIR="$pybind11_dir")
  elif has_cmake_package pybind11; then
    python_opts=(-DJITCACHE_PYTHON=ON)
  else
    echo "pybind11 missing: building without the Python module"
  fi
fi
configure() {
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DJITCACHE_WITH_CUDA=ON \
    -DJITCACHE_WITH_OPENCL=OFF -DJITCACHE_WITH_HIP=OFF -DJITCACHE_BUILD_TESTS=$tests \
    -DJITCACHE_BUILD_BENCH=ON -DPython3_EXECUTABLE="$(command -v python3)" "$@" \
    >"$OUT/configure.txt" 2>&1
}
if ! configure "${python_opts[@]}"; then
  if [ "${python_opts[0]}" = -DJITCACHE_PYTHON=OFF ]; then
    tail -30 "$OUT/configure.txt"
    exit 1
  fi
  grep -A3 'CMake Error' "$OUT/configure.txt" | head -8
  echo "configure with the Python module failed: building without it"
  configure -DJITCACHE_PYTHON=OFF || { tail -30 "$OUT/configure.txt"; exit 1; }
fi
targets=(jitcache_cli bench_cuda bench_cuda_tuning)
[ "$tests" = ON ] && targets+=(test_cuda)
cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" >"$OUT/build.txt" 2>&1 ||
  { grep -E 'error|Error' "$OUT/build.txt" | head -30; exit 1; }
echo "built: ${targets[*]}"

section jitcache info
"$BUILD/tools/jitcache/jitcache" info 2>&1 | tee "$OUT/info.txt"

if [ "$tests" = ON ] && part tests; then
  section tests
  (cd "$BUILD" && ctest -R '^Cuda' --output-on-failure --timeout 300) >"$OUT/ctest.txt" 2>&1 ||
    tests_failed=yes
  tail -15 "$OUT/ctest.txt"
  "$BUILD/tests/cuda/test_cuda" >"$OUT/test_cuda.txt" 2>&1
  grep -E '^\[  (PASSED|FAILED)  \]|^\[  SKIPPED \] [0-9]+ test|tests? from .* ran' "$OUT/test_cuda.txt"
fi

section python module with cupy
# jitcache.cuda.load_module used through CuPy's raw driver calls (python/tests/test_cuda_gpu.py).
# pytest: installed, or its packages in build-deps/python.
if ! part python; then
  echo "skipped (PARTS)"
elif [ "$cupy" = yes ] && grep -q "Python module  : ON" "$OUT/configure.txt"; then
  if cmake --build "$BUILD" -j"$(nproc)" --target jitcache_python >>"$OUT/build.txt" 2>&1; then
    PYTHONPATH="$PWD/$BUILD/python:$deps/python" timeout 600 python3 -m pytest -q -rs \
      -p no:cacheprovider python/tests/test_cuda_gpu.py python/tests/test_cuda.py 2>&1 | tail -15
  else
    grep -E 'error|Error' "$OUT/build.txt" | tail -20
  fi
else
  echo "skipped: needs CuPy and pybind11 (pybind11-dev, or its files in build-deps)"
fi

if part bench; then
  section benchmark
  cupy_flag=()
  [ "$cupy" = yes ] || cupy_flag=(--no-cupy)
  # The package columns export for the GPU's own target (compute capability 9.0: sm_90).
  arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
  timeout 500 python3 bench/cuda/compare.py --bench "$BUILD/bench/cuda/bench_cuda" \
    --kernels kernels --runs "${RUNS:-21}" --cli "$BUILD/tools/jitcache/jitcache" --arch "$arch" \
    --raw "$OUT/bench_raw.jsonl" "${cupy_flag[@]}" | tee "$OUT/bench.md"
fi

if part tuning; then
  section tuning benchmark
  # The tuning database's CUDA example (kernels/matmul_tuned.cu) tuned per size on this GPU.
  timeout 300 "$BUILD/bench/cuda/bench_cuda_tuning" --kernels kernels --runs 51 |
    tee "$OUT/bench_tuning.md"
fi

if part warm; then
  section warm throughput
  # NVRTC for sm_90 with 1 job up to one per core: this machine has more cores than the VM.
  jobs=1,2,4,8
  [ "$(nproc)" -gt 8 ] && jobs="$jobs,$(nproc)"
  timeout 400 python3 bench/core/warm_jobs.py --build "$BUILD" --runs "${WARM_RUNS:-3}" \
    --variants 16 --jobs "$jobs" | tee "$OUT/warm_jobs.md"
fi
# The tests' result is the script's: a failed CUDA test is exit status 1, after the benchmark.
if [ "$tests_failed" = yes ]; then
  echo "run_gpu.sh: CUDA tests failed (see $OUT/ctest.txt)"
  exit 1
fi
