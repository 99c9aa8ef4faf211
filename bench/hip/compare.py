#!/usr/bin/env python3
"""Runs the HIP compile-only benchmarks, each measurement in a fresh process, and prints a
Markdown table of medians:

  cold: hipRTC compile + store, empty jitcache user tier
  warm: hit from the user tier in a fresh process (Cache open, the remembered hipRTC/comgr
        identity and key, read, verify of the entry and of the code object; neither library
        is opened); no GPU load
  warm, libs loaded: the same with libamdhip64 and comgr opened before the clock, as in an
        application that already uses HIP

usage: compare.py --bench PATH/bench_hip --kernels DIR [--target gfx90a] [--runs N] [--raw FILE]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fresh_process import median, run  # noqa: E402

# (file, name expressions)
KERNELS = [
    ("saxpy.hip", []),
    ("reduce.hip", []),
    ("transpose.hip", []),
    ("axpy_template.hip", ["axpy<float>", "axpy<double>"]),
]


def measure(kernel, args, raw):
    file, expressions = kernel
    path = os.path.join(args.kernels, file)
    bench = lambda mode, cache: run([args.bench, mode, args.target, path] + expressions,
                                    {"JITCACHE_DIR": cache}, raw)
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        cold = []
        for i in range(args.runs):
            cold.append(bench("cold", os.path.join(tmp, f"cold{i}")))
            assert cold[-1]["outcome"] == "miss", cold[-1]
        result["cold"] = median(cold)
        result["compile"] = median(cold, "compile_ms")
        result["bytes"] = cold[0]["bytes"]
        warm_dir = os.path.join(tmp, "cold0")
        for mode in ("warm", "warm-loaded"):
            lines = [bench(mode, warm_dir) for _ in range(args.runs)]
            assert all(line["outcome"] == "hit" and line["tier"] == "user" for line in lines)
            result[mode] = median(lines)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True)
    parser.add_argument("--kernels", required=True)
    parser.add_argument("--target", default="gfx90a")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--raw", help="also write every measurement to this file (JSON lines)")
    args = parser.parse_args()
    if args.runs < 5:
        sys.exit("--runs must be at least 5")
    args.kernels = os.path.abspath(args.kernels)
    raw = open(args.raw, "w") if args.raw else None
    try:
        rows = [(kernel[0], measure(kernel, args, raw)) for kernel in KERNELS]
    except RuntimeError as error:
        sys.exit(str(error))
    print(f"Target {args.target}, compile only (no GPU); medians of {args.runs} fresh processes, "
          "ms.\n")
    print("| kernel | bytes | hipRTC compile | cold (miss) | warm hit | warm hit, libs loaded "
          "| cold / warm |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['bytes']} | {r['compile']:.2f} | {r['cold']:.2f} | {r['warm']:.2f} "
              f"| {r['warm-loaded']:.2f} | {r['cold'] / r['warm']:.1f}x |")


if __name__ == "__main__":
    main()
