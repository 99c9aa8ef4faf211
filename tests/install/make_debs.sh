#!/usr/bin/env bash
# Makes the Debian packages of BUILD_DIR (a build for /usr) with cpack into OUT_DIR, afresh
# (ctest install.make_debs: the fixture that install.lintian and install.deb use).
# Usage: make_debs.sh BUILD_DIR OUT_DIR
set -euo pipefail
build_dir=$1 out=$2
rm -rf "$out"
cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$out" >"$out.log" 2>&1 || {
  cat "$out.log"
  exit 1
}
rm -rf "$out/_CPack_Packages" "$out.log" # the staging trees: only the .deb files are used
ls "$out"
