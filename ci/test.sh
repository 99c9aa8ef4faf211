#!/usr/bin/env bash
# Installs dependencies, checks formatting, builds, and runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install.sh
ci/format.sh
ci/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 600
