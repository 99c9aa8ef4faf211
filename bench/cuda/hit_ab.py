"""Two builds' user-tier hits side by side, alternated, in fresh processes.

For each sample kernel: every build's bench_cuda fills a user tier of its own (cold), then each
round runs one warm hit per build (the source to the first completed launch, compare.py's (b))
and the raw floor (cuModuleLoadData of the same cubin read from a file, launched the same way).
Prints the medians and each build's median excess over the floor, in ms.

    python3 bench/cuda/hit_ab.py ROUNDS LABEL=BUILD_DIR LABEL=BUILD_DIR

BUILD_DIR is a build folder holding bench/cuda/bench_cuda.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from compare import KERNELS  # noqa: E402
from fresh_process import median, run  # noqa: E402


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
            run([bench, "cold", source, function] + flags, {"JITCACHE_DIR": tiers[label]}, None)
            if symbol is None:  # export prints the symbol's name, not a measurement
                export = [bench, "export", source, function]
                symbol = subprocess.run(export + (["--expression"] if expression else [])
                                        + [cubin], env={**os.environ, "JITCACHE_DIR": tiers[label]},
                                        capture_output=True, text=True, check=True).stdout.strip()
        hits = {label: [] for label in builds}
        floor = []
        for _ in range(rounds):
            for label, build in builds.items():
                bench = os.path.join(build, "bench", "cuda", "bench_cuda")
                hits[label].append(run([bench, "warm", source, function] + flags,
                                       {"JITCACHE_DIR": tiers[label]}, None))
            floor.append(run([bench, "floor", cubin, symbol, "--launch", spec], {}, None))
        line = f"| {file} | {median(floor):.3f} |"
        for label in builds:
            hit = median(hits[label])
            line += f" {label} {hit:.3f} (+{hit - median(floor):.3f}) |"
        print(line, flush=True)


if __name__ == "__main__":
    main()
