#!/usr/bin/env python3
"""An application's start on PoCL, from main() to its first kernel ready, in fresh processes side
by side (one round of every mode per run), and a Markdown table of medians:

  no cache:  bench_start, JITCACHE_DISABLE=1: PoCL compiles vector_ops.cl from source
  user tier: bench_start, JITCACHE_DIR warmed by one run before: a hit from the user tier
  embedded:  bench_start_embedded (the package for this PoCL linked in by
             jitcache_embed_packages), JITCACHE_DIR beneath a regular file (nothing can be
             written): a hit from the embedded tier

Every run gets a fresh, empty POCL_CACHE_DIR, so PoCL's own cache never serves. "After the
context" leaves out PoCL's start (platform, device, context), which every mode pays alike.

usage: embedded_start.py [--build build] [--runs 15] [--raw FILE]
"""
import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from fresh_process import median, run  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--raw", help="also write every measurement to this file (JSON lines)")
    args = parser.parse_args()
    plain = os.path.join(args.build, "bench", "opencl", "bench_start")
    embedded = os.path.join(args.build, "bench", "opencl", "bench_start_embedded")
    raw = open(args.raw, "w") if args.raw else None
    with tempfile.TemporaryDirectory() as tmp:
        blocker = os.path.join(tmp, "a-file")
        with open(blocker, "w") as f:
            f.write("not a folder\n")
        user_dir = os.path.join(tmp, "user")
        modes = {
            "no cache": (plain, {"JITCACHE_DISABLE": "1"}, ("miss", "compile")),
            "user tier": (plain, {"JITCACHE_DIR": user_dir, "JITCACHE_OPENCL_STORE": "wait"},
                          ("hit", "user")),
            "embedded": (embedded, {"JITCACHE_DIR": os.path.join(blocker, "jitcache")},
                         ("hit", "embedded")),
        }
        runs = 0

        def once(name):
            nonlocal runs
            program, env, _ = modes[name]
            runs += 1
            pocl = os.path.join(tmp, f"pocl{runs}")
            return run([program], {**env, "POCL_CACHE_DIR": pocl}, raw)

        once("user tier")  # warms the user tier
        lines = {name: [] for name in modes}
        for _ in range(args.runs):
            for name in modes:
                line = once(name)
                expected = modes[name][2]
                if (line["outcome"], line["tier"]) != expected:
                    raise RuntimeError(f"{name}: expected {expected}, got {line}")
                lines[name].append(line)
    print(f"| start to first kernel ready (PoCL, vector_ops.cl), {args.runs} runs | median ms |"
          " quartiles ms | after the context, median ms | against no cache |")
    print("|---|---:|---:|---:|---:|")
    base = median(lines["no cache"])
    for name in modes:
        value = median(lines[name])
        low, _, high = statistics.quantiles([line["ms"] for line in lines[name]], n=4)
        after = statistics.median(line["ms"] - line["context_ms"] for line in lines[name])
        print(f"| {name} | {value:.1f} | {low:.1f}-{high:.1f} | {after:.1f} |"
              f" {base / value:.1f}x |")

if __name__ == "__main__":
    main()
