#!/usr/bin/env bash
# Installs dependencies, checks formatting, builds, and runs every test through ctest; then the
# package reader's fuzzer for 30 s on each core (ci/fuzz.sh, libFuzzer, in build-fuzz), and the
# tests again under AddressSanitizer + UndefinedBehaviorSanitizer and ThreadSanitizer
# (ci/sanitize.sh, in build-asan and build-tsan). Each phase's time is printed when it ends, and all of them again
# when the script ends, passed or failed: CI must stay under 45 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
times=() running='' started=0
report() {
  [[ -z $running ]] || times+=("$(printf '%-8s %5d s, then failed' "$running" $((SECONDS - started)))")
  ((${#times[@]} == 0)) || printf 'ci/test.sh: %s\n' "${times[@]}"
}
trap report EXIT
phase() { # phase NAME COMMAND...: runs it and records how long it took
  running=$1 started=$SECONDS
  shift
  "$@"
  times+=("$(printf '%-8s %5d s (%d s in all)' "$running" $((SECONDS - started)) "$SECONDS")")
  echo "ci/test.sh: ${times[-1]}"
  running=''
}
phase install ci/install.sh
phase format ci/format.sh
phase build ci/build.sh
phase test ci/ctest.sh build --output-on-failure -j "$(nproc)" --timeout 600
phase fuzz ci/fuzz.sh 30 # on each core: a minute of fuzzing on 2
phase asan ci/sanitize.sh asan
phase tsan ci/sanitize.sh tsan
