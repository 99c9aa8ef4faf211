#!/usr/bin/env bash
# `pip install .` from a checkout (ctest install.pip, label pip). The checkout's files (what git
# tracks, and new files it does not ignore) are copied to WORK_DIR/src; there, with Debian's
# python3 and a virtual environment that sees the system's packages (setuptools, wheel, PyOpenCL):
#   - without pybind11 (CMake told not to find it), pip fails and its report names pybind11-dev;
#   - `pip install --no-build-isolation --no-index .` installs the module and the jitcache tool
#     (nothing downloaded); with no JITCACHE_* variable set and a fresh home, the module imports
#     from the environment, hands its stores to the tool installed with it, reads the system
#     package folder, and builds a PyOpenCL program through the default cache: a miss, then a hit.
# Exit 77 (ctest: skipped) without Debian's python3 and its venv module.
#
# Usage: pip_install.sh SOURCE_DIR WORK_DIR [COMPILER_LAUNCHER]
set -euo pipefail
source_dir=$1 work=$2 launcher=${3:-}
python=/usr/bin/python3 # Debian's, whose packages hold PyOpenCL (not a pyenv or conda python3)

fail() {
  echo "install.pip FAILED: $*" >&2
  exit 1
}
[[ -x $python ]] && "$python" -c 'import ensurepip, venv' 2>/dev/null ||
  { echo "install.pip skipped: needs $python with venv (python3-venv)"; exit 77; }
while read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(JITCACHE_|POCL_)' || true)
unset XDG_CACHE_HOME CUDA_CACHE_DISABLE PYTHONPATH
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1

rm -rf "$work"
mkdir -p "$work/src"
if git -C "$source_dir" rev-parse --show-toplevel >/dev/null 2>&1; then
  git -C "$source_dir" ls-files -z --cached --others --exclude-standard |
    (cd "$source_dir" && xargs -0 tar -c --no-recursion --ignore-failed-read) |
    tar -x -C "$work/src"
else
  tar -c -C "$source_dir" --exclude='./build*' . | tar -x -C "$work/src"
fi
"$python" -m venv --system-site-packages "$work/venv"
pip=("$work/venv/bin/python" -m pip install --no-build-isolation --no-index)
# What the test checks is the way from pyproject.toml to an imported module, not the compiler's
# work: the build is made cheap (no optimisation, files compiled in batches, the OpenCL backend
# only; a user's pip build is optimised and has every backend found), and uses the build's
# compiler launcher (ccache).
launch_args=(-DCMAKE_BUILD_TYPE=None -DCMAKE_UNITY_BUILD=ON -DJITCACHE_WITH_CUDA=OFF
             -DJITCACHE_WITH_HIP=OFF)
[[ -z $launcher ]] || launch_args+=("-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher"
                                    "-DCMAKE_C_COMPILER_LAUNCHER=$launcher")

# Without pybind11: a failure that says what to install.
cd "$work/src"
if output=$(CMAKE_ARGS="-DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON ${launch_args[*]}" \
            "${pip[@]}" . 2>&1); then
  fail "pip installed the module without pybind11: $output"
fi
grep -q "pybind11-dev" <<<"$output" || fail "pip's report does not name pybind11-dev: $output"
echo "install.pip: without pybind11, pip says: $(grep -m1 "pybind11-dev" <<<"$output")"
rm -rf build-python

started=$SECONDS
CMAKE_ARGS="${launch_args[*]}" "${pip[@]}" . >"$work/pip.log" 2>&1 ||
  fail "pip install: $(tail -40 "$work/pip.log")"
echo "install.pip: pip install took $((SECONDS - started)) s"

# The installed module, from outside the source tree, no variable set, a fresh home.
cd "$work"
export HOME=$work/home
mkdir -p "$HOME"
cat >"$work/check.py" <<'PY'
import os, sys
import numpy as np
import pyopencl as cl
import jitcache, jitcache.opencl, jitcache._jitcache as m

package = os.path.dirname(jitcache.__file__)
assert package.startswith(sys.prefix + os.sep), (package, sys.prefix)
assert m._store_worker() == os.path.join(package, "bin", "jitcache"), m._store_worker()
assert m._system_path() == ["/usr/share/jitcache/packages"], m._system_path()
device = cl.get_platforms()[0].get_devices()[0]
ctx = cl.Context([device])
source = "__kernel void twice(__global float* a) { a[get_global_id(0)] *= 2.0f; }"
program = jitcache.opencl.build(ctx, device, source, "-cl-fast-relaxed-math")
queue = cl.CommandQueue(ctx)
values = np.arange(16, dtype=np.float32)
buffer = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=values)
program.twice(queue, values.shape, None, buffer)
result = np.empty_like(values)
cl.enqueue_copy(queue, result, buffer)
assert (result == 2 * values).all(), result
print(f"outcome={program.info.outcome} tier={program.info.tier}")
PY
for expected in "outcome=miss tier=compile" "outcome=hit tier=user"; do
  output=$("$work/venv/bin/python" "$work/check.py" 2>&1) || fail "the installed module: $output"
  grep -q "$expected" <<<"$output" || fail "expected '$expected', got: $output"
  echo "install.pip: $expected"
  # The stores handed to the tool installed with the module (venv/bin/jitcache runs it).
  "$work/venv/bin/jitcache" store --wait --timeout 240 >/dev/null ||
    fail "jitcache store --wait, through the environment's jitcache command"
done
rm -rf "$work"
echo "install.pip: passed"
