#!/usr/bin/env python3
"""Runs the CUDA load benchmarks, each measurement in a fresh process, and prints a Markdown table
of medians:

  (a) cold: NVRTC compile + store + load, empty jitcache user tier
  (b) warm: hit from the user tier in a fresh process (Cache open + key + read + load), and
      its parts: opening the user tier; the key (NVRTC's remembered identity, the manifest) with
      the entry's read, less the manifest's stat checks where they overlap the load; and
      cuModuleLoadData
  key without a manifest: building the key from the files (header scan and hashing), as the
      first process to make a request does
  (c) floor: cuModuleLoadData of the same cubin read from a file, no cache code; runs of (b)
      and (c) alternate, and (b)/(c) is given both as the ratio of the medians and as the median
      of each run's ratio to the floor run after it
  (p) package hit: the entry exported (`jitcache export --arch`) into a package on
      JITCACHE_SYSTEM_PATH, a new, empty user tier for every run (a new machine's first run)
  (q) package hit with a user tier that exists (made by an earlier run); (p), (q), (b) and (c)
      alternate
  (d) CuPy RawModule disk-cache hit, same source; the -I options jitcache gives NVRTC implicitly
      (the kernels folder, the toolkit's include directories) given to CuPy explicitly
  (e) cuda.core program-cache hit (FileStreamProgramCache), its key with the digest of the
      headers the kernel includes (read and hashed in the timed region, as its documentation asks
      of options that pull in header files), same options as (d)
  raw driver paths, no cache code, alternating with (b), (p) and (q): cuModuleLoadData with
      CUDA_MODULE_LOADING=LAZY (c) and EAGER, cuLibraryLoadData with LAZY and EAGER; "fastest
      raw" is the lowest of their medians

Every column is the time from "I have the source" (or the cubin, for the raw paths) to "the first
launch has completed": load, get the function, launch it once (one block of 256 threads) and
synchronise. CUDA context creation and the kernel's buffers are made before the clock starts.

usage: compare.py --bench PATH/bench_cuda --kernels DIR [--cli PATH/jitcache --arch sm_90] [--runs N]
                  [--no-cupy] [--no-cuda-core] [--raw FILE]
(p) and (q) need --cli.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fresh_process import median, run  # noqa: E402

# (file, function or name expression, is a name expression, its arguments for one launch:
# f a float, i the int 256, k the int 32 (a 32x32 matrix), p a device buffer; see bench_cuda.cpp)
KERNELS = [
    ("saxpy.cu", "saxpy", False, "fppi"),
    ("scale.cu", "scale<float, 4>", True, "pfi"),
    ("transpose.cu", "transpose", False, "ppkk"),
    ("block_reduce.cu", "block_sum", False, "ppi"),
]
RAW = [("c", "floor", "LAZY"), ("c_eager", "floor", "EAGER"), ("l", "library", "LAZY"),
       ("l_eager", "library", "EAGER")]


def toolkit_include_dirs(bench):
    return subprocess.run([bench, "include-dirs"], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def measure(kernel, args, raw):
    file, function, expression, spec = kernel
    path = os.path.join(args.kernels, file)
    flag = (["--expression"] if expression else []) + ["--launch", spec]
    bench = lambda mode, cache: run([args.bench, mode, path, function] + flag,
                                    {"JITCACHE_DIR": cache}, raw)
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        cold = []
        for i in range(args.runs):
            cold.append(bench("cold", os.path.join(tmp, f"cold{i}")))
            assert cold[-1]["outcome"] == "miss", cold[-1]
        result["a"] = median(cold)
        result["compile"] = statistics.median(line["compile_ms"] for line in cold)
        result["device"] = cold[0]["device"]
        warm_dir = os.path.join(tmp, "cold0")
        cubin = os.path.join(tmp, "kernel.cubin")
        symbol = subprocess.run([args.bench, "export", path, function]
                                + (["--expression"] if expression else []) + [cubin],
                                env={**os.environ, "JITCACHE_DIR": warm_dir},
                                capture_output=True, text=True, check=True).stdout.strip()
        # (b) and (c) alternate, so that a drift in the driver's load time (it varies by a
        # millisecond between runs of a heavy module) falls on both alike.
        package = os.path.join(tmp, "kernel.jcpkg")
        if args.cli:
            subprocess.run([args.cli, "export", "-o", package, "--backend", "cuda", "--arch",
                            args.arch], env={**os.environ, "JITCACHE_DIR": warm_dir},
                           capture_output=True, text=True, check=True)
        packaged = lambda cache: run([args.bench, "warm", path, function] + flag,
                                     {"JITCACHE_DIR": cache, "JITCACHE_SYSTEM_PATH": package}, raw)
        lines, fresh, kept = [], [], []
        raws = {name: [] for name, _, _ in RAW}
        floor = raws["c"]
        if args.cli:
            packaged(os.path.join(tmp, "kept"))  # makes the user tier that (q) finds
        for i in range(args.runs):
            lines.append(bench("warm", warm_dir))
            for name, mode, loading in RAW:
                raws[name].append(run([args.bench, mode, cubin, symbol, "--launch", spec],
                                      {"CUDA_MODULE_LOADING": loading}, raw))
            if args.cli:
                fresh.append(packaged(os.path.join(tmp, f"fresh{i}")))
                kept.append(packaged(os.path.join(tmp, "kept")))
        assert all(line["outcome"] == "hit" and line["tier"] == "user" for line in lines)
        assert all(line["outcome"] == "hit" and line["tier"] == "system" for line in fresh + kept)
        result["p"] = median(fresh) if fresh else None
        result["q"] = median(kept) if kept else None
        for name in raws:
            result[name] = median(raws[name])
        result["fastest"] = min(result[name] for name in raws)
        result["pairs"] = statistics.median(b["ms"] / c["ms"] for b, c in zip(lines, floor))
        result["b"] = median(lines)
        part = lambda f: statistics.median(f(line) for line in lines)
        result["b_open"] = part(lambda line: line["open_ms"])
        result["b_key"] = part(lambda line: line["total_ms"] - line["load_ms"])
        result["b_load"] = part(lambda line: line["load_ms"])
        result["key"] = median([bench("key", warm_dir) for _ in range(args.runs)])
        options = ["-I" + d for d in [args.kernels] + toolkit_include_dirs(args.bench)]
        peer_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_cupy.py")
        if not args.no_cupy:
            cupy = lambda: run([sys.executable, peer_script, path, function] + flag + ["--"]
                               + options, {"CUPY_CACHE_DIR": os.path.join(tmp, "cupy")}, raw)
            try:
                cupy()  # compiles and fills CuPy's disk cache
                result["d"] = median([cupy() for _ in range(args.runs)])
            except RuntimeError as error:
                print(error, file=sys.stderr)
        if not args.no_cuda_core:
            headers = os.path.join(tmp, "headers.txt")
            with open(headers, "w") as out:
                out.write(subprocess.run([args.bench, "headers", path, function]
                                         + (["--expression"] if expression else []),
                                         capture_output=True, text=True, check=True).stdout)
            core = lambda: run([sys.executable, peer_script, "--peer", "cuda.core", path, function]
                               + flag + ["--symbol", symbol, "--headers", headers, "--cache",
                                         os.path.join(tmp, "cuda_core"), "--"] + options, {}, raw)
            try:
                core()  # compiles and fills its cache
                result["e"] = median([core() for _ in range(args.runs)])
            except RuntimeError as error:
                print(error, file=sys.stderr)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True)
    parser.add_argument("--kernels", required=True)
    parser.add_argument("--cli", help="the jitcache tool, for the package columns (p) and (q)")
    parser.add_argument("--arch", default="sm_90", help="the GPU's target, for the package")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-cupy", action="store_true")
    parser.add_argument("--no-cuda-core", action="store_true")
    parser.add_argument("--raw", help="also write every measurement to this file (JSON lines)")
    args = parser.parse_args()
    args.kernels = os.path.abspath(args.kernels)
    raw = open(args.raw, "w") if args.raw else None
    rows = []
    for kernel in KERNELS:
        try:
            rows.append((kernel[0], measure(kernel, args, raw)))
        except (RuntimeError, AssertionError) as error:
            print(f"{kernel[0]}: {error}", file=sys.stderr)
    if not rows:
        sys.exit("no kernel could be measured")
    fmt = lambda v: f"{v:.2f}" if v is not None else "n/a"
    ratio = lambda a, b: f"{a / b:.2f}x" if a is not None and b else "n/a"
    print(f"Device: {rows[0][1]['device']}; medians of {args.runs} fresh processes, ms, from the "
          "source (or cubin) to the first completed launch; context creation excluded.\n")
    print("| kernel | NVRTC compile | (a) cold | (b) user-tier hit | (b): open | (b): key + read "
          "| (b): load | key without a manifest | (p) package, new machine | (q) package "
          "| module lazy (c) | module eager | library lazy | library eager | fastest raw "
          "| (b)/fastest | (b)/(c) of pairs | (p)/fastest | (e) cuda.core hit | (d) CuPy hit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {fmt(r['compile'])} | {fmt(r['a'])} | {fmt(r['b'])} "
              f"| {fmt(r['b_open'])} | {fmt(r['b_key'])} | {fmt(r['b_load'])} | {fmt(r['key'])} "
              f"| {fmt(r['p'])} | {fmt(r['q'])} | {fmt(r['c'])} | {fmt(r['c_eager'])} "
              f"| {fmt(r['l'])} | {fmt(r['l_eager'])} | {fmt(r['fastest'])} "
              f"| {ratio(r['b'], r['fastest'])} | {r['pairs']:.2f}x "
              f"| {ratio(r['p'], r['fastest'])} | {fmt(r.get('e'))} | {fmt(r.get('d'))} |")


if __name__ == "__main__":
    main()
