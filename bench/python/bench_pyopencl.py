#!/usr/bin/env python3
"""jitcache.opencl.build against PyOpenCL's own cache, every measurement in a fresh process,
and what the Python call adds to a memory-tier hit.

usage: bench/python/bench_pyopencl.py [--runs N] [--build build] [--calls N]
Needs the Python module built (build/python) and python3-pyopencl.

1. For each sample kernel (kernels/*.cl, -I kernels): medians of N runs (default 5), alternated,
   of a fresh process building it warm through PyOpenCL's cache (warmed by an earlier run,
   POCL_KERNEL_CACHE=0 as in bench/opencl/compare.py) and through jitcache (a user-tier hit),
   each with a fresh POCL_CACHE_DIR: until the build returns and until every kernel's first
   launch has finished (bench/opencl/pyopencl_bench.py, after context creation).
2. A repeated identical request in one process (memory tier, the 10 KB source of
   `bench_opencl repeat`): per-call medians of 21 batches of jitcache.opencl.build, of the
   extension's call alone (the handle, without making a pyopencl.Program), and of the C++ call
   (`bench_opencl repeat`, run here too).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench", "opencl"))
from compare import python_with_pyopencl  # noqa: E402
from fresh_process import median, run  # noqa: E402


def repeat_worker(path, calls):
    """Runs in the child: per-call medians (us) of build() and of the extension's call."""
    import pyopencl as cl
    import jitcache.opencl
    from jitcache import _jitcache

    source = open(path).read()
    big = (source + "\n//" + "x" * max(10240, len(source)))[:10239] + "\n"
    options = "-I " + os.path.dirname(path)
    device = cl.get_platforms()[0].get_devices()[0]
    ctx = cl.Context([device])
    cache = jitcache.Cache()
    jitcache.opencl.build(ctx, device, big, options, cache=cache)
    build = jitcache.opencl.build

    def per_call_us(call):
        batches = []
        for _ in range(21):
            t = time.perf_counter()
            for _ in range(calls):
                call()
            batches.append((time.perf_counter() - t) * 1e6 / calls)
        return statistics.median(batches)

    def binding_only():
        handle, _ = _jitcache.opencl_build(cache, ctx.int_ptr, device.int_ptr, big, options)
        cl.Program.from_int_ptr(handle, retain=False)  # releases the reference again

    def handle_only():
        _jitcache.opencl_build(cache, ctx.int_ptr, device.int_ptr, big, options)

    full = per_call_us(lambda: build(ctx, device, big, options, cache=cache))
    wrapped = per_call_us(binding_only)
    # handle_only leaks one reference per call to the memory tier's program: measured last.
    raw = per_call_us(handle_only)
    cache.close()
    import json
    print(json.dumps({"build_us": full, "binding_and_program_us": wrapped, "binding_us": raw}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", default="build")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeat-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.repeat_worker:
        return repeat_worker(args.repeat_worker, args.calls)

    python = python_with_pyopencl()
    worker = [python, os.path.join(ROOT, "bench", "opencl", "pyopencl_bench.py")]
    env = {"PYTHONPATH": os.path.join(ROOT, args.build, "python")}
    files = sorted(f for f in os.listdir(os.path.join(ROOT, "kernels")) if f.endswith(".cl"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="jitcache-bench-python-") as work:
        fresh_n = [0]

        def fresh():
            fresh_n[0] += 1
            p = os.path.join(work, f"fresh{fresh_n[0]}")
            os.makedirs(p)
            return p

        for name in files:
            path = os.path.join(ROOT, "kernels", name)
            pyc, user = fresh(), fresh()
            run(worker + [path, pyc], {"POCL_KERNEL_CACHE": "0", "POCL_CACHE_DIR": fresh()}, None)
            jit_env = {**env, "JITCACHE_DIR": user}
            first = run(worker + [path, "-", "--jitcache"], {**jit_env, "POCL_CACHE_DIR": fresh()},
                        None)
            assert first["outcome"] == "miss", first
            py_runs, jit_runs = [], []
            for _ in range(args.runs):
                py_runs.append(run(worker + [path, pyc],
                                   {"POCL_KERNEL_CACHE": "0", "POCL_CACHE_DIR": fresh()}, None))
                r = run(worker + [path, "-", "--jitcache"], {**jit_env, "POCL_CACHE_DIR": fresh()},
                        None)
                assert r["outcome"] == "hit", r
                jit_runs.append(r)
            row = {"py_build": median(py_runs, "build_ms"),
                   "py_launch": median(py_runs, "first_launch_ms"),
                   "jit_build": median(jit_runs, "build_ms"),
                   "jit_launch": median(jit_runs, "first_launch_ms")}
            rows.append((name, row))
            print(name, {k: round(v, 2) for k, v in row.items()}, file=sys.stderr)

        matmul = os.path.join(ROOT, "kernels", "matmul.cl")
        repeat_env = {**env, "JITCACHE_DIR": fresh(), "POCL_CACHE_DIR": fresh()}
        py = run([python, os.path.abspath(__file__), "--calls", str(args.calls),
                  "--repeat-worker", matmul], repeat_env, None)
        bench_opencl = os.path.join(ROOT, args.build, "bench", "opencl", "bench_opencl")
        cpp = None
        if os.path.exists(bench_opencl):
            cpp = run([bench_opencl, "repeat", os.path.relpath(matmul, ROOT)],
                      {"JITCACHE_DIR": fresh(), "POCL_CACHE_DIR": fresh()}, None)

    print("| kernel | PyOpenCL cache: build | first launch | jitcache: build | first launch "
          "| build ratio | first launch ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['py_build']:.1f} ms | {r['py_launch']:.1f} ms | "
              f"{r['jit_build']:.1f} ms | {r['jit_launch']:.1f} ms | "
              f"{r['py_build'] / r['jit_build']:.1f}x | {r['py_launch'] / r['jit_launch']:.1f}x |")
    print()
    print("| memory-tier hit, 10 KB source | us per call |")
    print("|---|---:|")
    if cpp:
        print(f"| C++ build_program (bench_opencl repeat) | {cpp['median_ns_per_call'] / 1e3:.2f} |")
    print(f"| extension call only (handle) | {py['binding_us']:.2f} |")
    print(f"| extension call + pyopencl.Program.from_int_ptr | {py['binding_and_program_us']:.2f} |")
    print(f"| jitcache.opencl.build | {py['build_us']:.2f} |")
    if cpp:
        print(f"| added by Python over C++ | {py['build_us'] - cpp['median_ns_per_call'] / 1e3:.2f} |")


if __name__ == "__main__":
    main()
