#!/usr/bin/env bash
# Installs what jitcache needs to build, test, run the demo and the benchmarks (Debian packages).
# Idempotent: installs only what is missing. The CUDA toolkit (NVRTC) is expected to be present
# already; CMake finds it, and the CUDA backend is skipped when it is not there.
set -euo pipefail

packages=(
  cmake g++ make pkg-config clang-format
  lld # places the hit path's code together (cmake/JitcacheCodeLayout.cmake; gold otherwise)
  valgrind # the layout test records a hit's functions with callgrind (code_layout.current)
  clang libclang-rt-14-dev
  liblmdb-dev libxxhash-dev libssl-dev libhiredis-dev redis-server
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
  libamdhip64-dev
  python3 python3-dev python3-pyopencl python3-numpy python3-pytest pybind11-dev
  python-pyopencl-doc
  util-linux
  libopenmpi-dev openmpi-bin python3-mpi4py
  dpkg-dev file
  # the packaging tests (tests/install): lintian, PyOpenCL's examples, `pip install .` into a venv
  lintian python-pyopencl-doc python3-venv python3-setuptools python3-wheel
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ci/install.sh: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
