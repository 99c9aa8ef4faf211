#!/usr/bin/env bash
# Debian's lintian on the packages in DEBS_DIR (ctest install.lintian): fails on any error or
# warning; the informational tags are shown. What is left, and why: cmake/deb/*/lintian-overrides
# (each with its reason) and cmake/JitcachePackaging.cmake. (Not --show-overrides: with it,
# lintian 2.116 exits 2 for overridden warnings.)
# Usage: lintian.sh DEBS_DIR
set -euo pipefail
debs=("$1"/*.deb)
[[ -e ${debs[0]} ]] || { echo "no .deb in $1"; exit 1; }
status=0
output=$(lintian --fail-on error,warning --display-info "${debs[@]}" 2>&1) || status=$?
# As root, lintian says it would rather not be (harmless).
grep -v '^running with root privileges is not recommended!$' <<<"$output" || true
((status == 0)) || echo "lintian: errors or warnings above (exit $status)"
exit "$status"
