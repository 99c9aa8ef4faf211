#!/usr/bin/env bash
# Runs ctest in the build directory given first, with the arguments after it. When tests fail,
# the output of each failed one is printed again at the very end, where a CI log's tail shows
# it; the exit status is ctest's.
set -uo pipefail
dir=$1
shift
status=0
(cd "$dir" && ctest "$@") || status=$?
if ((status)); then
  echo "=== the failed tests' output again (from $dir/Testing/Temporary/LastTest.log) ==="
  awk '/^[0-9]+\/[0-9]+ Testing: / { text = ""; failed = 0 }
       { text = text $0 "\n" }
       /^Test Fail/ { failed = 1 }
       /" end time: / { if (failed) printf "%s", text; text = ""; failed = 0 }' \
    "$dir/Testing/Temporary/LastTest.log" | tail -n 400
fi
exit "$status"
