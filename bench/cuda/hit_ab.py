"""Two builds' user-tier hits side by side, alternated, in fresh processes.

For each sample kernel: every build's bench_cuda fills a user tier of its own (cold), then each
round runs one warm hit per build (the source to the first completed launch, compare.py's (b))
and the raw floor (cuModuleLoadData of the same cubin read from a file, launched the same way).
Prints the medians and each build's median excess over the floor, in ms.

    python3 bench/cuda/hit_ab.py ROUNDS LABEL=BUILD_DIR LABEL=BUILD_DIR

BUILD_DIR is a build folder holding bench/cuda/bench_cuda.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import KERNELS  # noqa: E402


def run(args, tier=None):
    env = dict(os.environ, **({"JITCACHE_DIR": tier} if tier else {}))
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(" ".join(args) + ": " + done.stderr)
    return done.stdout.strip().splitlines()[-1]


def main():
    rounds = int(sys.argv[1])
    builds = dict(arg.split("=", 1) for arg in sys.argv[2:])
    kernels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels")
    scratch = tempfile.mkdtemp()
    for file, function, expression, spec in KERNELS:
        source = os.path.join(kernels, file)
        flags = (["--expression"] if expression else []) + ["--launch", spec]
        tiers = {label: tempfile.mkdtemp(dir=scratch) for label in builds}
        cubin = os.path.join(scratch, file + ".cubin")
        symbol = None
        for label, build in builds.items():
            bench = os.path.join(build, "bench", "cuda", "bench_cuda")
            run([bench, "cold", source, function] + flags, tiers[label])
            if symbol is None:
                export = [bench, "export", source, function]
                symbol = run(export + (["--expression"] if expression else []) + [cubin],
                             tiers[label])
        hits = {label: [] for label in builds}
        floor = []
        for _ in range(rounds):
            for label, build in builds.items():
                bench = os.path.join(build, "bench", "cuda", "bench_cuda")
                hits[label].append(json.loads(run([bench, "warm", source, function] + flags,
                                                  tiers[label]))["ms"])
            floor.append(json.loads(run([bench, "floor", cubin, symbol, "--launch", spec]))["ms"])
        line = f"| {file} | {statistics.median(floor):.3f} |"
        for label in builds:
            median = statistics.median(hits[label])
            line += f" {label} {median:.3f} (+{median - statistics.median(floor):.3f}) |"
        print(line, flush=True)


if __name__ == "__main__":
    main()
