#!/usr/bin/env bash
# Installs dependencies, checks formatting, builds, and runs every test through ctest; then the
# package reader's fuzzer for 60 s (ci/fuzz.sh, libFuzzer, in build-fuzz), and the tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer and ThreadSanitizer (ci/sanitize.sh, in
# build-asan and build-tsan).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install.sh
ci/format.sh
ci/build.sh
ci/ctest.sh build --output-on-failure -j "$(nproc)" --timeout 600
ci/fuzz.sh 60
ci/sanitize.sh
