#!/usr/bin/env python3
"""A short CuPy program's whole process, warm, side by side in fresh processes: CuPy with its own
disk cache, and CuPy under each given build of the NVRTC front-end (CuPy's disk cache off:
CUPY_CACHE_IN_MEMORY=1), alternated round by round. The program imports CuPy, runs an
elementwise operation, a reduction and an ElementwiseKernel of its own (each an NVRTC program),
and prints the results, which must be equal in every process. Before the rounds, one process
each fills its cache; then every front-end process must be all hits (`jitcache stats`).
Prints the process time (start to exit, as this script times it): median and quartiles.

usage (on a machine with CuPy and an NVIDIA GPU, from the repository root):
  bench/cuda/cupy_start.py --jitcache BUILD/tools/jitcache/jitcache [--runs N]
                           NAME=PATH/libjitcache-nvrtc.so [NAME=...]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fresh_process import quartiles  # noqa: E402
from rtc_front_end_gpu import counters, nvrtc_lib_dir  # noqa: E402

PROGRAM = r'''
import cupy as cp
x = cp.arange(1 << 12, dtype=cp.float32)
k = cp.ElementwiseKernel("float32 a", "float32 b", "b = a * a + 1", "cupy_start_sq")
print(float((x * 3).sum()), float(k(x).max()))
'''


def run(env):
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROGRAM], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)
    took = (time.perf_counter() - start) * 1000
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return done.stdout.strip(), took


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jitcache", required=True)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("builds", nargs="+", help="NAME=front-end library")
    args = parser.parse_args()
    lib = nvrtc_lib_dir()
    path = ":".join(filter(None, [lib, os.environ.get("LD_LIBRARY_PATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        modes = {"CuPy's disk cache": {"CUPY_CACHE_DIR": os.path.join(tmp, "cupy")}}
        for name, front_end in (b.split("=", 1) for b in args.builds):
            modes[f"front-end {name}"] = {
                "CUPY_CACHE_IN_MEMORY": "1", "JITCACHE_DIR": os.path.join(tmp, name),
                "LD_PRELOAD": os.path.abspath(front_end), "LD_LIBRARY_PATH": path}
        expected = {run(env)[0] for env in modes.values()}  # each cache filled
        if len(expected) != 1:
            raise RuntimeError(f"results differ between modes: {expected}")
        filled = {mode: counters(args.jitcache, env["JITCACHE_DIR"])
                  for mode, env in modes.items() if "JITCACHE_DIR" in env}
        times = {mode: [] for mode in modes}
        for _ in range(args.runs):
            for mode, env in modes.items():
                result, took = run(env)
                if result not in expected:
                    raise RuntimeError(f"{mode}: {result}, expected {expected}")
                times[mode].append(took)
        for mode, (hits, misses) in filled.items():
            now = counters(args.jitcache, modes[mode]["JITCACHE_DIR"])
            if now != (hits + args.runs * misses, misses) or not misses:
                raise RuntimeError(f"{mode}: {now} (hits, misses) after the rounds, "
                                   f"{(hits, misses)} after the filling run")
            print(f"{mode}: {misses} programs, each a hit in every later process")
    print(f"\nCuPy's start and 3 kernels, {args.runs} fresh processes per mode, ms: median "
          "(quartiles)")
    print("| mode | the process |")
    print("|---|---:|")
    for mode, values in times.items():
        q1, median, q3 = quartiles(values)
        print(f"| {mode} | {median:.1f} ({q1:.1f} to {q3:.1f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
