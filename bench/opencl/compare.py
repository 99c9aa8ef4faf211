#!/usr/bin/env python3
"""Side-by-side cold/warm comparison on PoCL, every measurement in a fresh process.

usage: bench/opencl/compare.py [--runs N] [--build build] [--files a.cl,b.cl]
For each sample kernel file, medians of N runs (default 5) of:
  (a)  cold: jitcache, empty jitcache dir and empty PoCL cache, until every kernel's first launch
  (a') cold: until build_program returns   vs   plain clBuildProgram from source (empty PoCL cache)
  (b)  warm: jitcache hit from the user tier (empty PoCL cache dir)
  (c)  floor: the same stored binary, raw clCreateProgramWithBinary + clBuildProgram
  (p)  jitcache hit from a package on JITCACHE_SYSTEM_PATH (`jitcache export` of the user tier),
       with an empty user tier (a new machine: the user tier is made on the way)
  (q)  the same with the user tier of (b), which holds the entry too: the package, looked up
       first, serves
  (d)  PoCL's own cache (POCL_KERNEL_CACHE=1, warmed by an earlier run), built from source
  (e)  PyOpenCL's cache (POCL_KERNEL_CACHE=0, warmed by an earlier run)
and prints a Markdown table of the medians and the ratios.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, env):
    full = dict(os.environ)
    full["JITCACHE_OPENCL_STORE"] = "wait"  # each cold run's entry is stored when it exits
    full.update(env)
    out = subprocess.run(cmd, env=full, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def python_with_pyopencl():
    """An interpreter that imports pyopencl: this one, else the distribution's (python3-pyopencl)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([candidate, "-c", "import pyopencl"], capture_output=True).returncode == 0:
            return candidate
    sys.exit("compare.py: no python3 with pyopencl (install python3-pyopencl)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", default="build")
    ap.add_argument("--files", default="",
                    help="comma-separated sample kernels (default: all in bench/opencl/kernels.json)")
    args = ap.parse_args()
    cli = os.path.join(ROOT, args.build, "tools", "jitcache", "jitcache")
    bench = os.path.join(ROOT, args.build, "bench", "opencl", "bench_opencl")
    py = [python_with_pyopencl(), os.path.join(ROOT, "bench", "opencl", "pyopencl_bench.py")]
    # The kernels the bench knows how to launch (a tuning kernel such as matmul_tuned.cl needs
    # its parameters, and has its own benchmark).
    with open(os.path.join(ROOT, "bench", "opencl", "kernels.json")) as f:
        files = sorted(name for name in json.load(f) if name.endswith(".cl"))
    if args.files:
        files = [f for f in files if f in args.files.split(",")]
    work = tempfile.mkdtemp(prefix="jitcache-bench-")
    rows = []
    try:
        for name in files:
            path = os.path.join("kernels", name)
            d = os.path.join(work, name)
            fresh_n = [0]

            def fresh():
                fresh_n[0] += 1
                p = os.path.join(d, "fresh%d" % fresh_n[0])
                os.makedirs(p)
                return p

            m = {k: [] for k in ["a", "a_build", "plain", "b", "c", "p", "q", "d", "e"]}
            for _ in range(args.runs):
                r = run([bench, "jitcache", path], {"JITCACHE_DIR": fresh(), "POCL_CACHE_DIR": fresh()})
                assert r["outcome"] == "miss"
                m["a"].append(r["first_launch_ms"])
                m["a_build"].append(r["build_ms"])
                r = run([bench, "source", path], {"POCL_CACHE_DIR": fresh(), "POCL_KERNEL_CACHE": "0"})
                m["plain"].append(r["build_ms"])
            user = fresh()
            run([bench, "jitcache", path], {"JITCACHE_DIR": user, "POCL_CACHE_DIR": fresh()})
            binary = os.path.join(d, "stored.bin")
            subprocess.run([bench, "export", path, binary], check=True, cwd=ROOT,
                           env=dict(os.environ, JITCACHE_DIR=user, POCL_CACHE_DIR=fresh()))
            package = os.path.join(d, "opencl-pocl.jcpkg")
            subprocess.run([cli, "export", "-o", package, "--backend", "opencl", "--device", "0"],
                           check=True, cwd=ROOT, capture_output=True,
                           env=dict(os.environ, JITCACHE_DIR=user, POCL_CACHE_DIR=fresh()))
            pocl = fresh()
            run([bench, "source", path], {"POCL_CACHE_DIR": pocl, "POCL_KERNEL_CACHE": "1"})
            pyc = fresh()
            run(py + [path, pyc], {"POCL_KERNEL_CACHE": "0", "POCL_CACHE_DIR": fresh()})
            for _ in range(args.runs):
                r = run([bench, "jitcache", path], {"JITCACHE_DIR": user, "POCL_CACHE_DIR": fresh()})
                assert r["outcome"] == "hit", r
                m["b"].append(r["first_launch_ms"])
                m["c"].append(run([bench, "raw", path, binary], {"POCL_CACHE_DIR": fresh()})["first_launch_ms"])
                r = run([bench, "jitcache", path],
                        {"JITCACHE_DIR": fresh(), "JITCACHE_SYSTEM_PATH": package, "POCL_CACHE_DIR": fresh()})
                assert r["outcome"] == "hit" and r["tier"] == "system", r
                m["p"].append(r["first_launch_ms"])
                r = run([bench, "jitcache", path],
                        {"JITCACHE_DIR": user, "JITCACHE_SYSTEM_PATH": package, "POCL_CACHE_DIR": fresh()})
                assert r["outcome"] == "hit" and r["tier"] == "system", r
                m["q"].append(r["first_launch_ms"])
                m["d"].append(run([bench, "source", path], {"POCL_CACHE_DIR": pocl, "POCL_KERNEL_CACHE": "1"})["first_launch_ms"])
                m["e"].append(run(py + [path, pyc], {"POCL_KERNEL_CACHE": "0", "POCL_CACHE_DIR": fresh()})["first_launch_ms"])
            med = {k: statistics.median(v) for k, v in m.items()}
            rows.append((name, med))
            print(name, {k: round(v, 2) for k, v in med.items()}, file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print("| kernel | (a) cold | (a') returns | plain build | a'/plain | (b) warm | (c) raw floor | b/c | (p) package, new user tier | p/c | (q) package, user tier there | q/c | q/b | (d) PoCL cache | (e) PyOpenCL | a/b | d/b | e/b |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, m in rows:
        print(f"| {name} | {m['a']:.0f} ms | {m['a_build']:.0f} ms | {m['plain']:.0f} ms | "
              f"{m['a_build'] / m['plain']:.2f} | {m['b']:.1f} ms | {m['c']:.1f} ms | {m['b'] / m['c']:.2f} | "
              f"{m['p']:.1f} ms | {m['p'] / m['c']:.2f} | {m['q']:.1f} ms | {m['q'] / m['c']:.2f} | "
              f"{m['q'] / m['b']:.2f} | "
              f"{m['d']:.1f} ms | {m['e']:.1f} ms | {m['a'] / m['b']:.0f}x | {m['d'] / m['b']:.2f} | {m['e'] / m['b']:.2f} |")


if __name__ == "__main__":
    main()
