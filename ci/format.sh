#!/usr/bin/env bash
# Checks that every C, C++ and header file under version control is formatted as .clang-format
# says (clang-format from Debian). With --fix, formats them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(--dry-run --Werror)
[[ ${1:-} == --fix ]] && mode=(-i)
git ls-files -z '*.c' '*.h' '*.cpp' '*.hpp' | xargs -0 clang-format "${mode[@]}"
echo "ci/format.sh: formatting checked"
