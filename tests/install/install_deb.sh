#!/usr/bin/env bash
# The Debian packages installed for real on this machine (ctest install.deb, label install; CI
# runs it as root). The packages in DEBS_DIR (made by make_debs.sh from a build for /usr) are
# installed with `apt-get install ./*.deb`, then, with no JITCACHE_* variable set and a fresh
# home for each program (the default cache directory, ~/.cache/jitcache, and PoCL's own cache
# both empty):
#   - tests/downstream/project built against the installed -dev package (find_package: app_cpp
#     in C++, app_c in C) and app.c built with pkg-config's flags: each a miss, then a hit from
#     the user tier;
#   - PyOpenCL's n-body.py example (python-pyopencl-doc) through the installed Python module
#     (nbody_through_jitcache.py): a miss, then a hit;
#   - n-body.py itself, unchanged, under the installed OpenCL layer (OPENCL_LAYERS): a miss,
#     then a hit, counted for the front-end "opencl-layer";
#   - a package exported by the installed tool into /usr/share/jitcache/packages: a fresh home's
#     first run is a hit from the system tier;
# then `apt-get purge` of every package: dpkg knows none of them, and no file or folder is left
# in /usr or /etc that was not there before.
#
# The machine is restored on every exit, failed or not (the packages purged, the package file
# removed), and the packages are installed only as long as the checks take. Exit 77 (ctest:
# skipped) where this cannot run: not root and no password-less sudo.
#
# Usage: install_deb.sh DEBS_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
debs_dir=$1 source_dir=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)

skip() {
  echo "install.deb skipped: $*"
  exit 77
}
fail() {
  echo "install.deb FAILED: $*" >&2
  exit 1
}

as_root=()
if [[ $(id -u) -ne 0 ]]; then
  sudo -n true 2>/dev/null || skip "needs root or password-less sudo (apt-get install)"
  as_root=(sudo -n)
fi

# No JITCACHE_* variable, and no runtime control that would turn the cache off.
while read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(JITCACHE_|POCL_)' || true)
unset XDG_CACHE_HOME CUDA_CACHE_DISABLE
# Python as users run it: writing bytecode next to the modules it imports (as root: into the
# package's folder, which dpkg must still remove).
unset PYTHONDONTWRITEBYTECODE

rm -rf "$work"
mkdir -p "$work"
system_folder=/usr/share/jitcache/packages
dropped=$system_folder/install-test.jcpkg
packages=()
installed=0
restore() {
  local status=$?
  trap - EXIT
  if ((installed)); then
    echo "install.deb: restoring the machine (purging ${packages[*]})"
    "${as_root[@]}" rm -f "$dropped"
    "${as_root[@]}" apt-get purge -y -qq -o DPkg::Lock::Timeout=300 "${packages[@]}" >/dev/null ||
      "${as_root[@]}" dpkg --purge "${packages[@]}" || status=1
  fi
  if ((status == 0)); then
    rm -rf "$work" # kept after a failure, for its logs
  fi
  exit "$status"
}
trap restore EXIT
trap 'exit 1' INT TERM HUP

# --- Before: the packages, and what /usr and /etc hold. ---
debs=("$debs_dir"/*.deb)
[[ -e ${debs[0]} ]] || fail "no .deb in $debs_dir"
for deb in "${debs[@]}"; do
  packages+=("$(dpkg-deb --field "$deb" Package)")
  # Files that some other installation put there already: dpkg would take them over silently,
  # and removing the package would delete them.
  while read -r path; do
    [[ -e /$path && ! -d /$path ]] && fail "/$path exists before $deb is installed: remove it first"
  done < <(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's,^\./,,')
done
for package in "${packages[@]}"; do
  if dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null | grep -q installed$; then
    fail "$package is installed already; this test installs and purges it"
  fi
done
snapshot() { find /usr /etc -xdev 2>/dev/null | LC_ALL=C sort; }
snapshot >"$work/before.txt"

# --- Installed: as short a time as the checks take. ---
# Every step is bounded by one deadline, well inside ctest's limit (900 s), so that this script
# always reaches its purge, whatever hangs.
started=$SECONDS
deadline=$((SECONDS + 600))
left() { echo $((deadline > SECONDS ? deadline - SECONDS : 1)); }
installed=1
timeout 300 "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends -o DPkg::Lock::Timeout=240 "${debs[@]}" >"$work/apt.log" 2>&1 ||
  fail "apt-get install: $(tail -20 "$work/apt.log")"
for package in "${packages[@]}"; do
  dpkg -L "$package" >>"$work/owned.txt"
done

# A fresh home: the default cache directory and PoCL's cache, both empty.
fresh_home() {
  export HOME="$work/home-$1"
  mkdir -p "$HOME"
}
# run NAME EXPECTED COMMAND...: COMMAND's output must match EXPECTED (an extended regex).
run() {
  local name=$1 expected=$2 output
  shift 2
  output=$(timeout "$(left)" "$@" 2>&1) || fail "$name (exit $?): $output"
  grep -Eq "$expected" <<<"$output" || fail "$name: expected '$expected', got: $output"
  echo "install.deb: $name: $(grep -Eo "$expected" <<<"$output" | tail -1)"
}
# miss_then_hit NAME COMMAND...: in a fresh home, a miss, the store waited for, then a hit.
miss_then_hit() {
  local name=$1
  shift
  fresh_home "$name"
  run "$name (1st)" "outcome=miss tier=compile" "$@"
  run "$name store" "pending" /usr/bin/jitcache store --wait --json
  run "$name (2nd)" "outcome=hit tier=user" "$@"
}

kernels=$source_dir/kernels
fresh_home info
run "jitcache info" "system path: \[\"$system_folder\"\]" /usr/bin/jitcache info

# C++ and C through find_package, C through pkg-config: the -dev package as installed.
project=$work/project
timeout "$(left)" cmake -S "$source_dir/tests/downstream/project" -B "$project" \
  -DCMAKE_BUILD_TYPE=Release -DDOWNSTREAM_EMBED=OFF >"$work/project.log" 2>&1 || fail "configure: $(cat "$work/project.log")"
timeout "$(left)" cmake --build "$project" --parallel 2 >>"$work/project.log" 2>&1 ||
  fail "build: $(cat "$work/project.log")"
flags=$(pkg-config --cflags --libs jitcache OpenCL) || fail "pkg-config finds no jitcache"
# shellcheck disable=SC2086 # the flags are words
cc -std=c99 -o "$project/app_pc" "$source_dir/tests/downstream/project/app.c" $flags ||
  fail "cc with pkg-config's flags ($flags)"
for program in app_cpp app_c app_pc; do
  miss_then_hit "$program" "$project/$program" "$kernels/vector_ops.cl" "$kernels"
done

# Python: PyOpenCL's n-body example with its program built through the installed module.
nbody=$(dpkg -L python-pyopencl-doc 2>/dev/null | grep '/n-body\.py$' | head -1) ||
  fail "PyOpenCL's n-body.py example not found: install python-pyopencl-doc (ci/install.sh)"
cd "$work"
miss_then_hit n-body /usr/bin/python3 "$here/nbody_through_jitcache.py" "$nbody"

# The OpenCL layer as installed: n-body.py itself, unchanged, with the one variable that turns
# the layer on (OPENCL_LAYERS) and PyOpenCL's own binary cache off (else its second run would
# not ask for a build): a miss, the store waited for, then a hit, as `jitcache stats` counts
# them for the front-end "opencl-layer".
layer=$(grep '/libjitcache-opencl-layer\.so$' "$work/owned.txt" | head -1)
[[ -n $layer ]] || fail "no package ships libjitcache-opencl-layer.so"
layer_counts() {
  /usr/bin/jitcache stats --json | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    row = json.loads(line)
    if row.get("front_end") == "opencl-layer":
        print("misses=%d hits=%d" % (row.get("misses", 0), row.get("hits", 0)))'
}
fresh_home layer
for round in 1 2; do
  OPENCL_LAYERS=$layer PYOPENCL_NO_CACHE=1 timeout "$(left)" /usr/bin/python3 "$nbody" \
    >"$work/layer-$round.log" 2>&1 || fail "n-body.py under the layer (run $round): $(tail -20 "$work/layer-$round.log")"
  [[ $round == 1 ]] && run "n-body.py under the layer, store" "pending" /usr/bin/jitcache store --wait --json
  counts=$(layer_counts)
  expected=$([[ $round == 1 ]] && echo "misses=[1-9][0-9]* hits=0" || echo "misses=[1-9][0-9]* hits=[1-9]")
  grep -Eq "^$expected\$" <<<"$counts" || fail "n-body.py under the layer (run $round): expected '$expected', got '$counts'"
  echo "install.deb: n-body.py under the layer (run $round): $counts"
done

# The system tier: a package the installed tool exports, dropped into the folder the packages
# ship, serves a program in a home whose user tier is empty.
fresh_home exporter
run "jitcache build" '"outcome":"miss"' /usr/bin/jitcache build --backend opencl --wait --json \
  --options "-I $kernels" "$kernels/vector_ops.cl"
run "jitcache export" "" /usr/bin/jitcache export -o "$work/exported.jcpkg" --backend opencl \
  --device 0
"${as_root[@]}" install -m 0644 "$work/exported.jcpkg" "$dropped"
fresh_home system
run "app_cpp, package in $system_folder" "outcome=hit tier=system" \
  "$project/app_cpp" "$kernels/vector_ops.cl" "$kernels"
"${as_root[@]}" rm -f "$dropped"

# --- Purged: nothing left. ---
"${as_root[@]}" apt-get purge -y -qq -o DPkg::Lock::Timeout=300 "${packages[@]}" \
  >"$work/purge.log" 2>&1 || fail "apt-get purge: $(tail -20 "$work/purge.log")"
installed=0
echo "install.deb: installed for $((SECONDS - started)) s"
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [[ -z $status || $status == not-installed ]] || fail "$package is still '$status' after purge"
done
snapshot >"$work/after.txt"
LC_ALL=C comm -13 "$work/before.txt" "$work/after.txt" >"$work/new.txt"
LC_ALL=C sort -u "$work/owned.txt" >"$work/owned-sorted.txt"
# Left behind: what the packages held, or anything named after jitcache. Other new paths (another
# process installing meanwhile) are shown, not failed on.
left=$(
  LC_ALL=C comm -12 "$work/new.txt" "$work/owned-sorted.txt"
  grep -i jitcache "$work/new.txt" || true
)
[[ -z $left ]] || fail "left behind after purge:"$'\n'"$(sort -u <<<"$left")"
if [[ -s $work/new.txt ]]; then
  echo "install.deb: new in /usr or /etc meanwhile, not the packages' (shown only):"
  head -20 "$work/new.txt"
fi
echo "install.deb: passed"
