#!/usr/bin/env bash
# Issue 32's MPI cohort benchmark with the CUDA backend (NVRTC offline for sm_90) on a machine
# without Open MPI (a GPU host with 16 cores or more): the bundle in build-deps/openmpi
# (bench/mpi/openmpi_bundle.sh, made on a Debian machine and carried there) stands in. Builds bench_mpi into build-gpu-mpi (CUDA on, OpenCL and HIP off, MPI on, no tests),
# then runs bench/mpi/run.py; everything is tee'd to $OUT/run_bundled.log, the table to
# $OUT/bench_mpi.md. Ends within 560 s (LIMIT). RANKS (16), RUNS (3), MODES, ARCH (sm_90),
# BUILD (build-gpu-mpi) override the defaults.
#
# usage (from the repository root): OUT=out bench/mpi/run_bundled.sh
set -u
T0=$SECONDS
OUT=${OUT:-$PWD/out}
LIMIT=${LIMIT:-560}
BUILD=${BUILD:-build-gpu-mpi}
deps=$PWD/build-deps
mkdir -p "$OUT"
exec > >(tee "$OUT/run_bundled.log") 2>&1
section() { printf '\n== %s (t=%ds)\n' "$*" $((SECONDS - T0)); }

section machine
nvidia-smi -L 2>&1 || echo "no nvidia-smi"
echo "cpus: $(nproc)"
cmake --version | head -1
python3 --version

section open mpi bundle
if [ ! -f "$deps/openmpi/env.sh" ]; then
  echo "build-deps/openmpi missing: make it with bench/mpi/openmpi_bundle.sh"
  exit 1
fi
# shellcheck source=/dev/null
. "$deps/openmpi/env.sh" "$deps/openmpi"
command -v mpirun mpicxx
mpirun --version | head -1
mpicxx -showme:compile
# The core's dependencies carried in build-deps (as bench/cuda/run_gpu.sh uses them).
export PKG_CONFIG_PATH="$deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CMAKE_PREFIX_PATH="$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

section configure and build
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DJITCACHE_WITH_CUDA=ON \
  -DJITCACHE_WITH_OPENCL=OFF -DJITCACHE_WITH_HIP=OFF -DJITCACHE_WITH_MPI=ON \
  -DJITCACHE_BUILD_TESTS=OFF -DJITCACHE_BUILD_BENCH=ON -DJITCACHE_PYTHON=OFF \
  -DMPI_C_COMPILER="$MPI_C_COMPILER" -DMPI_CXX_COMPILER="$MPI_CXX_COMPILER" \
  -DMPIEXEC_EXECUTABLE="$(command -v mpiexec)" >"$OUT/configure.txt" 2>&1 ||
  { tail -30 "$OUT/configure.txt"; exit 1; }
grep -E "CUDA|MPI \(cohort\)" "$OUT/configure.txt" | grep -E "^--" | head -5
cmake --build "$BUILD" -j"$(nproc)" --target jitcache_mpi bench_mpi >"$OUT/build.txt" 2>&1 ||
  { grep -E 'error|Error' "$OUT/build.txt" | head -30; exit 1; }
echo "built: jitcache_mpi bench_mpi"

section "benchmark (ranks ${RANKS:-16}, runs ${RUNS:-3})"
left=$((LIMIT - (SECONDS - T0) - 5))
echo "time left: ${left}s"
timeout "$left" python3 bench/mpi/run.py --build "$BUILD" --backend cuda --arch "${ARCH:-sm_90}" \
  --ranks "${RANKS:-16}" --runs "${RUNS:-3}" --modes "${MODES:-none,shared,per_rank,cohort}" |
  tee "$OUT/bench_mpi_raw.txt"
rc=${PIPESTATUS[0]}
sed -n '/^| mode/,$p' "$OUT/bench_mpi_raw.txt" >"$OUT/bench_mpi.md"
section "done: run.py rc=$rc"
exit "$rc"
