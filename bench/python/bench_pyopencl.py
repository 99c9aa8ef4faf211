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
   `bench_opencl repeat`): per-call medians of 21 rounds alternating the C++ call (looped inside
   the extension), jitcache.opencl.build, and the extension's call with and without making the
   pyopencl.Program, in the thread's CPU time (time.thread_time; the machine's other load does not
   count); and `bench_opencl repeat` in its own process (wall time) for reference.
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
    """Runs in the child: per-call costs (us) of a memory-tier hit, in 21 rounds that alternate
    the C++ call (looped in the extension), jitcache.opencl.build, and the extension's call with
    and without making the pyopencl.Program; medians, and the median of each round's difference
    between build() and the C++ call."""
    import json

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
    ctx_ptr, device_ptr = ctx.int_ptr, device.int_ptr

    def per_call_us(call):
        t = time.thread_time()
        for _ in range(calls):
            call()
        return (time.thread_time() - t) * 1e6 / calls

    def binding_and_program():
        handle, _ = _jitcache.opencl_build(cache, ctx_ptr, device_ptr, big, options)
        cl.Program.from_int_ptr(handle, retain=False)  # releases the reference again

    release = _cl_release_program()

    def binding():
        handle, _ = _jitcache.opencl_build(cache, ctx_ptr, device_ptr, big, options)
        release(handle)

    rounds = {"cpp": [], "build": [], "binding_and_program": [], "binding": []}
    for _ in range(21):
        rounds["cpp"].append(_jitcache.opencl_build_ns_per_call(
            cache, ctx_ptr, device_ptr, big, options, calls) / 1e3)
        rounds["build"].append(per_call_us(lambda: build(ctx, device, big, options, cache=cache)))
        rounds["binding_and_program"].append(per_call_us(binding_and_program))
        rounds["binding"].append(per_call_us(binding))
    cache.close()
    result = {f"{k}_us": statistics.median(v) for k, v in rounds.items()}
    result["added_us"] = statistics.median(b - c for b, c in zip(rounds["build"], rounds["cpp"]))
    print(json.dumps(result))


def _cl_release_program():
    """clReleaseProgram of the OpenCL loader, to drop a handle without making a
    pyopencl.Program."""
    import ctypes
    import ctypes.util
    release = ctypes.CDLL(ctypes.util.find_library("OpenCL")).clReleaseProgram
    release.argtypes = [ctypes.c_void_p]
    return release


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
    # Each cold run's entry is stored when it exits.
    env = {"PYTHONPATH": os.path.join(ROOT, args.build, "python"), "JITCACHE_OPENCL_STORE": "wait"}
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
          "| PyOpenCL/jitcache: build | first launch |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['py_build']:.1f} ms | {r['py_launch']:.1f} ms | "
              f"{r['jit_build']:.1f} ms | {r['jit_launch']:.1f} ms | "
              f"{r['py_build'] / r['jit_build']:.1f}x | {r['py_launch'] / r['jit_launch']:.1f}x |")
    print()
    print("| memory-tier hit, 10 KB source (matmul.cl) | us per call |")
    print("|---|---:|")
    if cpp:
        print(f"| C++ build_program, own process (bench_opencl repeat) | "
              f"{cpp['median_ns_per_call'] / 1e3:.2f} |")
    print(f"| C++ build_program, looped in the extension | {py['cpp_us']:.2f} |")
    print(f"| extension call (handle only) | {py['binding_us']:.2f} |")
    print(f"| extension call + pyopencl.Program.from_int_ptr | {py['binding_and_program_us']:.2f} |")
    print(f"| jitcache.opencl.build | {py['build_us']:.2f} |")
    print(f"| added by Python (median of per-round build - C++) | {py['added_us']:.2f} |")

if __name__ == "__main__":
    main()
