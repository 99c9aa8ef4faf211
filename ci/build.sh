#!/usr/bin/env bash
# Configures and builds jitcache in build/ (Release with debug info), with every backend whose
# SDK is found. Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -d /usr/local/cuda/bin && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="$PATH:/usr/local/cuda/bin"   # where the CUDA toolkit installs nvcc
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j "$(nproc)"
