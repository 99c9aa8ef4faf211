#!/usr/bin/env python3
"""A fresh process's first hit under builds of a front-end, side by side: each round runs one
process per build, in turn, so that drift hits every build alike. Each process is rtc_bench
(create, compile, get the binary, destroy) under the build's front-end, in a user tier of that
build's own where the first process of the run compiled. Prints, per build, the median and the
quartiles of the version call that precedes the programs (as CuPy's start makes it; the real
library's load, or the front-end's remembered answer and the open of its user tier; none with
--no-version), of the first request (a user-tier hit: what replaces the runtime's calls, goal
under 0.2 ms; without a version call before it, it opens the user tier itself), of its repeat in the process and of the whole process as this script
times it (start, load of the libraries and the runtime, both requests, exit), and of its exit
alone (from main's return, as rtc_bench reports it, until this script has seen the process
end: a front-end's work at exit, and the process's teardown). With --busy-writer MS, every
process runs while another keeps its user tier's writer lock busy (busy_writer, built beside
rtc_bench: MS ms held at a time, as a store with a slow write or sync holds it). With --at-once N,
also each round's N processes per build started at once (hits all, as the ranks of a warm job
or a parallel test suite start): the median time until the last has exited. With --many N,
each process asks for N distinct kernels instead (rtc_bench --many: the file's "@N@" replaced by
each kernel's number), all user-tier hits, as a CuPy program's kernels are: the first, each of
the others, and all N.

usage: first_hit.py --bench PATH/rtc_bench_nvrtc --kernels DIR [--runs N] [--kernel FILE]
                    [--arch=OPTION] [--include DIR ...] [--at-once N] [--tier-from DIR]
                    [--many N] [--extra=ARG ...] [--busy-writer MS] [--no-version]
                    LABEL=PATH/libjitcache-nvrtc.so [LABEL=...]
CUB (the repeat is then the request that sets the headers' watches): --kernel block_reduce.cu
--include CUDA/include/cccl --include CUDA/include.
hipRTC: --bench PATH/rtc_bench_hiprtc --kernel saxpy.hip --arch=--offload-arch=gfx90a and
builds of libjitcache-hiprtc.so.
The CuPy-like workload: --kernels bench/rtc/cupy_like --kernel cupy_like.cu --many 30
--include bench/rtc/cupy_like/include --include CUDA/include/cccl --include CUDA/include
--extra=--std=c++17 '--extra=reduce_@N@<float>'.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fresh_process import quartiles, run  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--kernels", required=True)
    parser.add_argument("--kernel", default="saxpy.cu")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--arch", default="-arch=sm_90", help="the target option")
    parser.add_argument("--include", action="append", default=[],
                        help="an include folder searched before the kernels' (repeatable)")
    parser.add_argument("--at-once", type=int, default=0,
                        help="also time this many processes per build started at once")
    parser.add_argument("--tier-from", help="a folder whose data.mdb each build's user tier "
                        "starts from (a large tier: bench/core/bench_page_check DIR 10000 makes "
                        "DIR/10000)")
    parser.add_argument("--many", type=int, default=0,
                        help="N distinct kernels per process instead of one request and its repeat")
    parser.add_argument("--extra", action="append", default=[],
                        help="an argument passed on to rtc_bench: an option or a name expression "
                        "(repeatable)")
    parser.add_argument("--busy-writer", type=int, default=0, metavar="MS",
                        help="hold each user tier's writer lock MS ms at a time while timing")
    parser.add_argument("--no-version", action="store_true",
                        help="ask no version before the programs (rtc_bench --no-version)")
    parser.add_argument("builds", nargs="+", help="LABEL=front-end library")
    args = parser.parse_args()
    builds = [(label, os.path.abspath(lib)) for label, lib in (b.split("=", 1) for b in args.builds)]
    kernels = os.path.abspath(args.kernels)
    argv = [os.path.abspath(args.bench)] + (["--no-version"] if args.no_version else []) + (
        ["--many", str(args.many)] if args.many else []) + [
        os.path.join(kernels, args.kernel), args.arch]
    for folder in args.include + [kernels]:
        argv += ["-I", os.path.abspath(folder)]
    argv += args.extra
    # Run from an empty folder: the key's include candidates include the current one.
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as here:
        os.chdir(here)
        env = {label: {"LD_PRELOAD": lib, "JITCACHE_DIR": os.path.join(tmp, label)}
               for label, lib in builds}
        for label, _ in builds:
            if args.tier_from:  # the user tier's data file, before the compile adds its entry
                os.makedirs(os.path.join(tmp, label, "v1"), mode=0o700)
                shutil.copy(os.path.join(args.tier_from, "data.mdb"),
                            os.path.join(tmp, label, "v1", "data.mdb"))
            run(argv, env[label], None)  # the compile
        writers = []
        if args.busy_writer:
            writer = os.path.join(os.path.dirname(os.path.abspath(args.bench)), "busy_writer")
            for label, _ in builds:
                writers.append(subprocess.Popen(
                    [writer, os.path.join(tmp, label, "v1"), str(args.busy_writer)],
                    stdout=subprocess.PIPE, text=True))
                if writers[-1].stdout.readline().strip() != "holding":
                    for started in writers:
                        started.kill()
                    raise RuntimeError(f"{label}: busy_writer did not start")
        first = {label: [] for label, _ in builds}
        again = {label: [] for label, _ in builds}
        process = {label: [] for label, _ in builds}
        at_once = {label: [] for label, _ in builds}
        exit_ms = {label: [] for label, _ in builds}
        every = {label: [] for label, _ in builds}
        version = {label: [] for label, _ in builds}
        try:
            for _ in range(args.runs):
                for label, _ in builds:
                    start = time.perf_counter()
                    line = run(argv, env[label], None)
                    process[label].append((time.perf_counter() - start) * 1000)
                    exit_ms[label].append(time.monotonic() * 1000 - line["end_ms"])
                    version[label].append(line["version_ms"])
                    if args.many:  # the first kernel; each of the others; all of them
                        first[label].append(line["first_ms"])
                        again[label].append((line["ms"] - line["first_ms"]) / max(args.many - 1, 1))
                        every[label].append(line["ms"])
                    else:
                        first[label].append(line["ms"])
                        again[label].append(line["again_ms"])
                    if args.at_once:
                        start = time.perf_counter()
                        batch = [subprocess.Popen(argv, env={**os.environ, **env[label]},
                                                  stdout=subprocess.DEVNULL)
                                 for _ in range(args.at_once)]
                        if any(p.wait() != 0 for p in batch):
                            raise RuntimeError(f"{label}: a process started at once failed")
                        at_once[label].append((time.perf_counter() - start) * 1000)
        finally:
            for writer in writers:
                writer.kill()
                writer.wait()
    busy = f", writer lock held {args.busy_writer} ms at a time" if args.busy_writer else ""
    print(f"{args.kernel}, {args.runs} fresh processes per build{busy}, ms: median (quartiles)")
    if args.many:
        print(f"| build | the version call | first kernel (user-tier hit) | each of the other "
              f"{args.many - 1} | all {args.many} | the process | its exit |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        columns = (version, first, again, every, process, exit_ms)
    else:
        print("| build | the version call | first request (user-tier hit) | its repeat | the process "
              "| its exit |")
        print("|---|---:|---:|---:|---:|---:|")
        columns = (version, first, again, process, exit_ms)
    for label, _ in builds:
        cells = [quartiles(values[label]) for values in columns]
        print(f"| {label} | " + " | ".join(f"{m:.3f} ({q1:.3f} to {q3:.3f})" for q1, m, q3 in cells)
              + " |")
    if args.at_once:
        print(f"\n{args.at_once} processes per build started at once, {args.runs} rounds, ms until "
              "the last exited: median (quartiles)")
        print("| build | all exited |")
        print("|---|---:|")
        for label, _ in builds:
            q1, m, q3 = quartiles(at_once[label])
            print(f"| {label} | {m:.1f} ({q1:.1f} to {q3:.1f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
