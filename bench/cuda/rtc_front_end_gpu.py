#!/usr/bin/env python3
"""The NVRTC front-end (libjitcache-nvrtc.so) under CuPy 14 and cuda.core 1.2 on an NVIDIA GPU:
fresh processes, every result equal to a run without the front-end, every kernel of the second
run a hit (`jitcache stats`), and the time of each process.

usage: rtc_front_end_gpu.py --front-end BUILD/interposers/libjitcache-nvrtc.so
                            --jitcache BUILD/tools/jitcache/jitcache --kernels kernels/ [--runs N]
                            [--first N] [--cache-root DIR]...

--first N: N first runs (every kernel a miss), each in a new user tier, alternated with runs
without the front-end, their median beside theirs (default 1). --cache-root DIR (repeatable):
the folder the user tiers of those first runs are made in, each measured (default: the system's
temporary folder); /dev/shm beside a disk's folder tells what the disk's synced writes cost.

How each reaches the front-end (both load NVRTC by absolute path from the wheel, through
cuda-pathfinder, which first takes a library with the soname libnvrtc.so.13 already loaded):
  LD_PRELOAD=.../libjitcache-nvrtc.so  (its soname is libnvrtc.so.13), with the wheel's
  nvidia/cu13/lib on LD_LIBRARY_PATH so that the front-end finds the real NVRTC there.
CuPy then calls through the handle it got (the front-end's); cuda.core looks symbols up in the
global scope, where the preloaded ones come first.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# A workload of a few dozen CuPy operations (elementwise, reductions, a RawKernel, an
# ElementwiseKernel, a ReductionKernel), each result reduced to a checksum.
CUPY_WORKLOAD = r'''
import json, sys
import cupy as cp
x = cp.arange(1 << 16, dtype=cp.float32) / 7
y = cp.linspace(0, 1, 1 << 16, dtype=cp.float32)
out = {}
ops = {
  "add": lambda: x + y, "mul": lambda: x * y, "sin": lambda: cp.sin(x), "exp": lambda: cp.exp(y),
  "sqrt": lambda: cp.sqrt(x), "where": lambda: cp.where(x > y, x, y), "clip": lambda: cp.clip(x, 1, 9),
  "sum": lambda: x.sum(), "max": lambda: y.max(), "mean": lambda: x.mean(), "std": lambda: y.std(),
  "cumsum": lambda: cp.cumsum(y), "argmax": lambda: cp.argmax(x), "dot": lambda: cp.dot(x, y),
  "sort": lambda: cp.sort(y[::-1]), "f64": lambda: x.astype(cp.float64) ** 2,
  "i32": lambda: (x.astype(cp.int32) % 7), "abs": lambda: cp.abs(x - 100), "log1p": lambda: cp.log1p(y),
  "tanh": lambda: cp.tanh(y), "pow": lambda: cp.power(y, 3), "norm": lambda: cp.linalg.norm(x),
  "outer": lambda: cp.outer(x[:64], y[:64]), "matmul": lambda: x[:4096].reshape(64, 64) @ y[:4096].reshape(64, 64),
  "fft": lambda: cp.abs(cp.fft.fft(y[:1024])), "unique": lambda: cp.unique((x % 13).astype(cp.int32)),
}
raw = cp.RawKernel(r"""extern "C" __global__ void twice(float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) v[i] *= 2; }""", "twice")
ew = cp.ElementwiseKernel("float32 a, float32 b", "float32 c", "c = a * a + b", "sq_add")
red = cp.ReductionKernel("float32 v", "float32 s", "v * v", "a + b", "s = a", "0", "sumsq")
for name, op in ops.items():
    out[name] = float(cp.asarray(op(), dtype=cp.float64).sum())
z = x.copy(); raw((256,), (256,), (z, cp.int32(z.size))); out["raw"] = float(z.sum())
out["ew"] = float(ew(x, y).sum()); out["red"] = float(red(y))
print(json.dumps(out))
'''

# cuda.core's Program.compile of the sample kernels: an include path, name expressions.
CUDA_CORE_WORKLOAD = r'''
import hashlib, json, sys
try:  # cuda.core 1.x; 0.x had them under cuda.core.experimental
    from cuda.core import Device, Program, ProgramOptions
except ImportError:
    from cuda.core.experimental import Device, Program, ProgramOptions
kernels, include = sys.argv[1], sys.argv[2]
Device(0).set_current()
arch = "sm_" + "".join(str(v) for v in Device(0).compute_capability)
out = {}
for file, expressions, paths in [("saxpy.cu", (), [kernels]),
                                 ("scale.cu", ("scale<float, 4>", "scale<double, 2>"), [kernels]),
                                 ("transpose.cu", (), [include + "/cccl", include]),
                                 ("block_reduce.cu", (), [include + "/cccl", include])]:
    code = open(f"{kernels}/{file}").read()
    program = Program(code, "c++", ProgramOptions(arch=arch, include_path=paths))
    module = program.compile("cubin", name_expressions=expressions)
    out[file] = hashlib.sha256(bytes(module.code)).hexdigest()
print(json.dumps(out))
'''


def nvrtc_lib_dir():
    """The wheel's folder holding libnvrtc.so.13 (nvidia/cu13/lib), or None."""
    try:
        import nvidia  # noqa: F401
    except ImportError:
        return None
    for base in nvidia.__path__:
        for sub in ("cu13/lib", "cuda_nvrtc/lib"):
            if os.path.exists(os.path.join(base, sub, "libnvrtc.so.13")):
                return os.path.join(base, sub)
    return None


def run(code, args, env):
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code] + args, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1]), seconds


def counters(jitcache, cache):
    done = subprocess.run([jitcache, "stats", "--json"], env={**os.environ, "JITCACHE_DIR": cache},
                          capture_output=True, text=True, check=True)
    for line in done.stdout.splitlines():
        entry = json.loads(line)
        if entry.get("backend") == "nvrtc":
            return entry["hits"], entry["misses"]
    return 0, 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--front-end", required=True)
    parser.add_argument("--jitcache", required=True)
    parser.add_argument("--kernels", required=True)
    parser.add_argument("--include", default="/usr/local/cuda/include")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--first", type=int, default=1)
    parser.add_argument("--cache-root", action="append", default=[])
    args = parser.parse_args()
    roots = args.cache_root or [None]
    lib = nvrtc_lib_dir()
    print(f"NVRTC from the wheel: {lib}")
    failed = False
    for name, code, extra in [("CuPy", CUPY_WORKLOAD, {"CUPY_CACHE_IN_MEMORY": "1"}),
                              ("cuda.core", CUDA_CORE_WORKLOAD, {})]:
        argv = [args.kernels, args.include] if name == "cuda.core" else []
        plain, plain_s = [], []
        for _ in range(args.runs):
            result, seconds = run(code, argv, extra)
            plain.append(result)
            plain_s.append(seconds)

        def front_end(cache):
            return {**extra, "JITCACHE_DIR": cache, "LD_PRELOAD": args.front_end,
                    "LD_LIBRARY_PATH": ":".join(filter(None, [lib, os.environ.get("LD_LIBRARY_PATH")]))}
        # Extra first runs, each in a new user tier under each root, alternated with runs
        # without the front-end (the first run checked below is another one).
        firsts = {root: [] for root in roots}
        alternated = []
        for _ in range(args.first - 1 if args.first > 1 else 0):
            alternated.append(run(code, argv, extra)[1])
            for root in roots:
                with tempfile.TemporaryDirectory(dir=root) as cache:
                    firsts[root].append(run(code, argv, front_end(cache))[1])
        with tempfile.TemporaryDirectory(dir=roots[0]) as cache:
            env = front_end(cache)
            first, first_s = run(code, argv, env)
            firsts[roots[0]].append(first_s)
            hits0, misses0 = counters(args.jitcache, cache)
            warm, warm_s = [], []
            for _ in range(args.runs):
                result, seconds = run(code, argv, env)
                warm.append(result)
                warm_s.append(seconds)
            hits, misses = counters(args.jitcache, cache)
        # CuPy's cumsum gave two values on the H100 without the front-end (715838799.0179 and
        # 715838804.8773, in separate processes of one environment): such results, and any that
        # differ between this run's processes without the front-end, are compared to 1e-6.
        varying = {key for r in plain[1:] for key in r if r[key] != plain[0].get(key)}
        varying |= {"cumsum"} & set(plain[0])

        def same(r):
            return set(r) == set(plain[0]) and all(
                r[k] == plain[0][k] or (k in varying and abs(r[k] - plain[0][k])
                                        <= 1e-6 * max(abs(r[k]), abs(plain[0][k]))) for k in r)

        equal = all(same(r) for r in [first] + warm)
        if varying:
            print(f"  {name}: compared to 1e-6 (they vary without the front-end): "
                  f"{', '.join(sorted(varying))}")
        # Which results differ, and whether runs without the front-end agree among themselves
        # (an operation the GPU computes in a varying order differs there too).
        for label, runs in [("without", plain[1:]), ("front-end", [first] + warm)]:
            for i, r in enumerate(runs):
                for key in sorted(set(r) | set(plain[0])):
                    if r.get(key) != plain[0].get(key):
                        print(f"  {name} {label} run {i}: {key} = {r.get(key)!r}, "
                              f"first run without: {plain[0].get(key)!r}")
        all_hits = misses == misses0 and hits - hits0 == args.runs * misses0 and misses0 > 0
        failed |= not (equal and all_hits)
        print(f"{name}: results equal: {equal}; first run: {misses0} misses, {hits0} hits; "
              f"{args.runs} later runs: {hits - hits0} hits, {misses - misses0} misses "
              f"({'every kernel a hit' if all_hits else 'NOT every kernel a hit'})")
        print(f"  process time (median s): without {statistics.median(plain_s):.3f}, "
              f"front-end first {first_s:.3f}, front-end warm {statistics.median(warm_s):.3f}")
        if args.first > 1:
            print(f"  first runs alternated with runs without (median of {args.first - 1} "
                  f"without: {statistics.median(alternated):.3f} s):")
            for root in roots:
                print(f"    user tiers in {root or tempfile.gettempdir()}: median of "
                      f"{len(firsts[root])} first runs {statistics.median(firsts[root]):.3f} s "
                      f"({', '.join(f'{t:.2f}' for t in firsts[root])})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
