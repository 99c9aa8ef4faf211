#!/usr/bin/env python3
"""The NVRTC and hipRTC front-ends against the runtimes they stand in for, side by side, each
measurement a fresh process (rtc_bench: create, compile, get the binary, destroy), medians:

  raw:  the runtime alone (no front-end)
  miss: under the front-end, the compile runs and the outputs are stored, in a user tier that
        another request (the same kernel for another target) made first
  hit:  under the front-end, the second process (nothing compiled; the runtime is not opened)

The front-end's cost on a miss is miss - raw (goal: under 1% of the compile); a hit replaces
create + compile + get-binary (goal: under 0.2 ms). "again": the same calls made a second time
in the process (raw: the runtime compiles again; hit: answered from the process's memory).

--many N (NVRTC): the CuPy-like workload instead (cupy_like/cupy_like.cu: N distinct kernels in
one process on headers that pull in cuda_fp16.h and libcu++ through -I, as CuPy's do): raw, and
under the front-end with an empty cache (every kernel a miss), then again (every kernel a hit).

usage: compare.py --bench PATH/rtc_bench_nvrtc --front-end PATH/libjitcache-nvrtc.so
                  --kernels DIR [--include DIR] [--hip] [--runs N] [--raw FILE] [--many N]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fresh_process import median, run  # noqa: E402

# (file, arch option, extra arguments: -I DIR pairs and name expressions)
NVRTC = [
    ("saxpy.cu", "-arch=sm_90", ["-I", "{kernels}"]),
    ("scale.cu", "-arch=sm_90", ["-I", "{kernels}", "scale<float, 4>", "scale<double, 2>"]),
    ("transpose.cu", "-arch=sm_90", ["-I", "{include}/cccl", "-I", "{include}"]),
    ("block_reduce.cu", "-arch=sm_90", ["-I", "{include}/cccl", "-I", "{include}"]),
]
HIPRTC = [
    ("saxpy.hip", "--offload-arch=gfx90a", []),
    ("reduce.hip", "--offload-arch=gfx90a", []),
    ("transpose.hip", "--offload-arch=gfx90a", []),
    ("axpy_template.hip", "--offload-arch=gfx90a", ["axpy<float>", "axpy<double>"]),
]


# The CuPy-like workload (--many): file, arch option, extra arguments.
CUPY_LIKE = ("cupy_like.cu", "-arch=sm_90",
             ["--std=c++17", "-I", "{here}/cupy_like/include", "-I", "{include}/cccl", "-I",
              "{include}", "reduce_@N@<float>"])


def many(args, raw):
    """The CuPy-like workload: its table."""
    file, arch, extra = CUPY_LIKE
    here = os.path.dirname(os.path.abspath(__file__))
    argv = [args.bench, "--many", str(args.many), os.path.join(here, "cupy_like", file), arch] + [
        a.format(here=here, include=args.include) for a in extra]
    front_end = {"LD_PRELOAD": args.front_end}
    print("| kernels | raw (ms) | under the front-end, every kernel a miss (ms) | front-end's cost "
          "on a miss | per kernel (ms) | second process, every kernel a hit (ms) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        raw_ms, miss, hit = [], [], []
        for i in range(args.runs):
            raw_ms.append(run(argv, {"JITCACHE_DIR": os.path.join(tmp, "unused")}, raw))
            cache = os.path.join(tmp, f"cache{i}")
            miss.append(run(argv, {**front_end, "JITCACHE_DIR": cache}, raw))
            hit.append(run(argv, {**front_end, "JITCACHE_DIR": cache}, raw))
    r, m, h = median(raw_ms), median(miss), median(hit)
    print(f"| {args.many} | {r:.0f} | {m:.0f} | {100 * (m - r) / r:+.2f}% | "
          f"{(m - r) / args.many:+.2f} | {h:.2f} |", flush=True)
    return 0


# The target of the request that makes the user tier before each miss.
PRIME = {False: "-arch=sm_80", True: "--offload-arch=gfx1030"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--front-end", required=True)
    parser.add_argument("--kernels", required=True)
    parser.add_argument("--include", default="")
    parser.add_argument("--hip", action="store_true")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--raw")
    parser.add_argument("--many", type=int, default=0)
    args = parser.parse_args()
    raw = open(args.raw, "w") if args.raw else None
    if args.many:
        return many(args, raw)
    print("| kernel | raw compile (ms) | miss (ms) | front-end's cost on a miss | hit, first in "
          "the process (ms) | raw again (ms) | hit again (ms) |")
    print("|---|---|---|---|---|---|---|")
    for file, arch, extra in HIPRTC if args.hip else NVRTC:
        argv = [args.bench, os.path.join(args.kernels, file), arch] + [
            a.format(kernels=args.kernels, include=args.include) for a in extra]
        front_end = {"LD_PRELOAD": args.front_end}
        with tempfile.TemporaryDirectory() as tmp:
            raw_ms, miss, hit = [], [], []
            for i in range(args.runs):
                # Side by side: one of each per round, so that drift hits all three alike.
                raw_ms.append(run(argv, {"JITCACHE_DIR": os.path.join(tmp, "unused")}, raw))
                cache = os.path.join(tmp, f"cache{i}")
                run([argv[0], argv[1], PRIME[args.hip]] + argv[3:],
                    {**front_end, "JITCACHE_DIR": cache}, None)
                miss.append(run(argv, {**front_end, "JITCACHE_DIR": cache}, raw))
                hit.append(run(argv, {**front_end, "JITCACHE_DIR": cache}, raw))
        r, m, h = median(raw_ms), median(miss), median(hit)
        ra, ha = median(raw_ms, "again_ms"), median(hit, "again_ms")
        print(f"| {file} | {r:.1f} | {m:.1f} | {100 * (m - r) / r:+.2f}% | {h:.3f} | {ra:.1f} | "
              f"{ha:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
