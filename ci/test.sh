#!/usr/bin/env bash
# Installs dependencies, checks formatting, builds, and runs every test through ctest; then the
# tests again under AddressSanitizer + UndefinedBehaviorSanitizer and ThreadSanitizer
# (ci/sanitize.sh, in build-asan and build-tsan).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install.sh
ci/format.sh
ci/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 600)
ci/sanitize.sh
