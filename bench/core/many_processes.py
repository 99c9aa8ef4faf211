#!/usr/bin/env python3
"""16 processes start together, cold, on the same 20 PoCL kernels: how many compiles, how long.

usage: bench/core/many_processes.py [--runs N] [--build build] [--processes 16] [--kernels 20]
Compares, each from empty caches shared by all the processes:
  jitcache  tests/stress/stress_worker through jitcache (compiles: jitcache's persisted counter;
            PoCL's own cache is on underneath, in its own empty directory)
  PoCL      the same worker calling clBuildProgram directly, POCL_KERNEL_CACHE=1 and one shared
            POCL_CACHE_DIR (compiles: PoCL's "Writing program.bc" debug lines)
  PyOpenCL  bench/core/pyopencl_worker.py, one shared cache_dir, POCL_KERNEL_CACHE=0
            (compiles: builds PyOpenCL reports as not cached)
Under jitcache and PyOpenCL, every process has its own POCL_CACHE_DIR. A build that fails, a
wrong result, and the kernels of a worker that crashed count as failures.
Every process builds the kernels in the same order, as the ranks of one job do, and checks each
kernel's output. Prints a Markdown table of the medians over N runs (default 3).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def python_with_pyopencl():
    """An interpreter that imports pyopencl: this one, else the distribution's (python3-pyopencl)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([candidate, "-c", "import pyopencl"], capture_output=True).returncode == 0:
            return candidate
    sys.exit("many_processes.py: no python3 with pyopencl (install python3-pyopencl)")


def run_all(command, n, env_of):
    """Starts `n` copies of `command` at once, copy i with the environment plus env_of(i);
    returns (wall seconds, [(stdout, stderr)]). A worker whose build failed, or whose kernel
    computed a wrong result, reports it (ok: false); one that crashed reports fewer lines."""
    start = time.perf_counter()
    procs = [subprocess.Popen(command, env=dict(os.environ, **env_of(i)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT) for i in range(n)]
    outputs = [p.communicate() for p in procs]
    wall = time.perf_counter() - start
    for p, (_, err) in zip(procs, outputs):
        if p.returncode not in (0, 1):
            print(f"a worker crashed ({p.returncode}): {err.strip().splitlines()[-1:]}",
                  file=sys.stderr)
    return wall, outputs


def lines(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", default="build")
    ap.add_argument("--processes", type=int, default=16)
    ap.add_argument("--kernels", type=int, default=20)
    args = ap.parse_args()
    worker = os.path.join(ROOT, args.build, "tests", "stress", "stress_worker")
    jitcache = os.path.join(ROOT, args.build, "tools", "jitcache", "jitcache")
    py = [python_with_pyopencl(), os.path.join(ROOT, "bench", "core", "pyopencl_worker.py")]
    n, k = args.processes, str(args.kernels)
    results = {"jitcache": [], "PoCL cache": [], "PyOpenCL cache": []}
    work = tempfile.mkdtemp(prefix="jitcache-many-")
    try:
        for run in range(args.runs):
            d = os.path.join(work, str(run))
            # Under jitcache and PyOpenCL, PoCL gets a directory per process: only the cache under
            # test is shared (PoCL crashes on a shared directory with POCL_KERNEL_CACHE=0).
            # wait: the first process holds the compile lease until it has stored the binary.
            env = {"JITCACHE_DIR": d + "/jitcache", "JITCACHE_OPENCL_STORE": "wait"}
            wall, outs = run_all([worker, "1", k, "0", "jitcache"], n,
                                 lambda i: dict(env, POCL_CACHE_DIR=f"{d}/pocl-{i}"))
            stats = subprocess.run([jitcache, "stats", "--json"], env=dict(os.environ, **env),
                                   capture_output=True, text=True, check=True).stdout
            compiles = json.loads(stats.splitlines()[0])["compiles"]
            results["jitcache"].append((compiles, wall, outs))

            env = {"POCL_KERNEL_CACHE": "1", "POCL_CACHE_DIR": d + "/pocl", "POCL_DEBUG": "llvm"}
            wall, outs = run_all([worker, "1", k, "0", "pocl"], n, lambda i: env)
            compiles = sum(err.count("Writing program.bc") for _, err in outs)
            results["PoCL cache"].append((compiles, wall, outs))

            env = {"POCL_KERNEL_CACHE": "0"}
            wall, outs = run_all(py + [k, d + "/pyopencl"], n,
                                 lambda i: dict(env, POCL_CACHE_DIR=f"{d}/pocl-py-{i}"))
            compiles = sum(l["outcome"] == "miss" for out, _ in outs for l in lines(out))
            results["PyOpenCL cache"].append((compiles, wall, outs))
            print(f"run {run}: " + ", ".join(f"{name} {r[-1][0]} compiles in {r[-1][1]:.1f} s"
                                             for name, r in results.items()), file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"| {n} processes x {args.kernels} kernels, cold | compiles | wall time | "
          f"build time per kernel | failed builds or wrong results (of {n * args.kernels}) |")
    print("|---|---:|---:|---:|---:|")
    for name, runs in results.items():
        per_run = [[l for out, _ in outs for l in lines(out)] for _, _, outs in runs]
        builds = [l["build_ms"] for run in per_run for l in run]
        failed = [n * args.kernels - sum(l["ok"] for l in run) for run in per_run]
        print(f"| {name} | {statistics.median(r[0] for r in runs):.0f} | "
              f"{statistics.median(r[1] for r in runs):.1f} s | {statistics.median(builds):.1f} ms | "
              f"{statistics.median(failed):.0f} (runs: {', '.join(map(str, failed))}) |")
    for name, runs in results.items():
        for _, _, outs in runs:
            for out, _ in outs:
                for l in lines(out):
                    if not l["ok"]:
                        print(f"{name}: kernel {l['kernel']}: {l.get('tier', '')}", file=sys.stderr)


if __name__ == "__main__":
    main()
