#!/usr/bin/env python3
"""A PyOpenCL program (layer_workload.py) under the jitcache OpenCL layer, side by side with its
own caches, every measurement in a fresh process.

usage: bench/opencl/layer_bench.py [--runs N] [--build build] [--python PYTHON] [--raw FILE]
Medians of N runs (default 5) of the workload's time from its context to every operation run:
  cold      nothing cached: PYOPENCL_NO_CACHE=1, an empty PoCL cache each run
  pocl      PoCL's own cache, warm (PYOPENCL_NO_CACHE=1: PyOpenCL builds from source)
  pyopencl  PyOpenCL's own binary cache, warm (and PoCL's, which its launches use)
  jitcache  under the layer (OPENCL_LAYERS), jitcache warm, PYOPENCL_NO_CACHE=1
  jitcache, invokers cached
            the same with PyOpenCL's binary cache off by cache_dir=False for every program
            (layer_workload.py --no-binary-cache) in place of PYOPENCL_NO_CACHE, which also turns off the cache of the Python code
            PyOpenCL generates to launch each kernel (made again, compiled and written back at
            every run without it: some 12 ms of this workload)
  floor     every program built from the binary handed to it (a dictionary in the process,
            in place of PyOpenCL's cached build)
Every warm row shares one PoCL cache, warmed first: PoCL compiles a kernel's work-group code at
its first launch and finds it there. Goal: jitcache within 1.1x of the floor, never slower than
pyopencl.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fresh_process import median, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def wait_for_stores(build, env):
    """Waits for the stores the layer handed over to a detached `jitcache store`."""
    subprocess.run([os.path.join(build, "tools", "jitcache", "jitcache"), "store", "--wait"],
                   env={**os.environ, **env}, check=True, capture_output=True, timeout=600)


def layer_counts(build, env):
    """The layer's (hits, misses) in the user tier of `env`."""
    done = subprocess.run([os.path.join(build, "tools", "jitcache", "jitcache"), "stats", "--json"],
                          env={**os.environ, **env}, check=True, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        counts = json.loads(line)
        if counts.get("front_end") == "opencl-layer":
            return counts["hits"], counts["misses"]
    return 0, 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--raw", help="every measurement, one JSON line each")
    args = parser.parse_args()
    layer = os.path.join(args.build, "interposers", "opencl_layer",
                         "libjitcache-opencl-layer.so")
    workload = os.path.join(HERE, "layer_workload.py")
    raw = open(args.raw, "w") if args.raw else None
    top = tempfile.mkdtemp(prefix="jitcache-layer-bench-")
    try:
        base = {"PYOPENCL_CTX": "0", "OPENCL_LAYERS": "",
                "POCL_CACHE_DIR": os.path.join(top, "pocl"),
                "XDG_CACHE_HOME": os.path.join(top, "xdg"),
                "JITCACHE_DIR": os.path.join(top, "jitcache")}
        no_cache = {**base, "PYOPENCL_NO_CACHE": "1"}
        layered = {**no_cache, "OPENCL_LAYERS": layer}
        binaries = os.path.join(top, "binaries.pkl")
        argv = [args.python, workload]
        # Warm every cache once (twice for PyOpenCL's: its first run builds over PoCL's cache).
        # (--record and --floor replace PyOpenCL's cached build: without PYOPENCL_NO_CACHE.)
        run(argv + ["--record", binaries], base, None)
        run(argv, base, None)
        run(argv, base, None)
        run(argv, layered, None)  # every program a miss: their count
        # The layer hands its stores over to a detached `jitcache store`: done before measuring.
        wait_for_stores(args.build, base)
        programs = layer_counts(args.build, base)[1]
        run(argv, layered, None)
        run(argv + ["--no-binary-cache"], {**base, "OPENCL_LAYERS": layer}, None)
        # The modes alternate, run by run: a machine whose load drifts shifts them alike.
        modes = [("pyopencl", base, []), ("jitcache", layered, []),
                 ("jitcache, invokers cached", {**base, "OPENCL_LAYERS": layer},
                  ["--no-binary-cache"]),
                 ("floor", base, ["--floor", binaries]), ("pocl", no_cache, [])]
        lines = {name: [] for name, _, _ in modes}
        lines["cold"] = []
        hits0, misses0 = layer_counts(args.build, base)
        for i in range(args.runs):
            for name, env, extra in modes:
                lines[name].append(run(argv + extra, env, raw))
            env = {**no_cache, "POCL_CACHE_DIR": os.path.join(top, f"cold-{i}")}
            lines["cold"].append(run(argv, env, raw))
        hits, misses = layer_counts(args.build, base)
        # Both layered modes: every build of every run a hit.
        if programs == 0 or misses != misses0 or hits - hits0 != 2 * args.runs * programs:
            sys.exit(f"the layer missed or was passed by: {hits - hits0} hits, "
                     f"{misses - misses0} misses in {2 * args.runs} runs of {programs} programs")
        rows = {name: median(measured) for name, measured in lines.items()}
        floor = rows["floor"]
        print(f"PyOpenCL workload (layer_workload.py), medians of {args.runs} fresh processes")
        print("| mode | ms | x floor |")
        print("|---|---:|---:|")
        for name in ["cold", "pocl", "pyopencl", "jitcache", "jitcache, invokers cached", "floor"]:
            print(f"| {name} | {rows[name]:.1f} | {rows[name] / floor:.2f} |")
    finally:
        shutil.rmtree(top, ignore_errors=True)


main()
