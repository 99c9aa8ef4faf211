#!/usr/bin/env python3
"""`jitcache warm` throughput against --jobs: kernels per second, and how close to linear.

usage: bench/core/warm_jobs.py [--build build] [--runs 3] [--arch sm_90] [--variants 4]
                               [--kernels saxpy.cu,scale.cu,transpose.cu] [--jobs 1,2,4,...]
Records the CUDA sample kernels (each under --variants option sets, -DJITCACHE_BENCH_VARIANT=i,
so that each is a request of its own) with `jitcache build --arch sm_80 --record`, then warms
the record for --arch (NVRTC: no GPU needed) into an empty cache directory with --jobs 1, 2 and
the number of cores (or the --jobs list), --runs times each, alternating. Prints a Markdown table of the medians:
wall and CPU seconds (user + system of the warm process), kernels per second, the speed-up over
--jobs 1 and the parallel efficiency (speed-up / jobs). On a machine other work shares, the
CPU seconds say what the warm needed, the wall seconds what it got.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(build, args, env=None, cwd=None):
    result = subprocess.run([os.path.join(build, "tools", "jitcache", "jitcache")] + args,
                            env=dict(os.environ, **(env or {})), cwd=cwd, capture_output=True,
                            text=True)
    if result.returncode != 0:
        sys.exit(f"warm_jobs.py: jitcache {' '.join(args[:2])} failed: {result.stderr.strip()}")
    return result.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--variants", type=int, default=4)
    ap.add_argument("--kernels", default="saxpy.cu,scale.cu,transpose.cu")
    ap.add_argument("--jobs", help="comma-separated --jobs values (default: 1, 2, the cores)")
    opts = ap.parse_args()
    build = os.path.abspath(opts.build)
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    jobs_list = (sorted({int(j) for j in opts.jobs.split(",")}) if opts.jobs
                 else sorted({1, 2, cores}))

    with tempfile.TemporaryDirectory(prefix="jitcache-warm-bench-") as tmp:
        # The record and the caches live outside the current directory the requests are made
        # in: the key of a source with a computed #include covers that directory's files.
        work = os.path.join(tmp, "cwd")
        os.mkdir(work)
        record = os.path.join(tmp, "record.jsonl")
        files = [os.path.join(ROOT, "kernels", k) for k in opts.kernels.split(",")]
        for variant in range(opts.variants):
            cli(build, ["build", "--backend", "cuda", "--arch", "sm_80", "--record", record,
                        "--options", f"-DJITCACHE_BENCH_VARIANT={variant}"] + files,
                {"JITCACHE_DIR": os.path.join(tmp, "app")}, cwd=work)
        with open(record) as f:
            requests = sum(1 for line in f if line.strip())

        seconds = {jobs: [] for jobs in jobs_list}
        cpu = {jobs: [] for jobs in jobs_list}
        for _ in range(opts.runs):
            for jobs in jobs_list:
                into = os.path.join(tmp, f"into-{jobs}")
                shutil.rmtree(into, ignore_errors=True)
                start = time.perf_counter()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                out = cli(build, ["warm", record, "--backend", "cuda", "--arch", opts.arch,
                                  "--jobs", str(jobs), "--into", into, "--json"], cwd=work)
                seconds[jobs].append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[jobs].append(after.ru_utime + after.ru_stime - before.ru_utime -
                                 before.ru_stime)
                compiled = sum(1 for line in out.splitlines()
                               if json.loads(line).get("outcome") == "compiled")
                if compiled != requests:
                    sys.exit(f"warm_jobs.py: --jobs {jobs} compiled {compiled} of {requests}")

    print(f"{requests} requests ({opts.kernels}, {opts.variants} option sets), NVRTC for "
          f"{opts.arch}, {cores} cores, medians of {opts.runs} runs\n")
    print(f"load average at the start: {load:.1f}\n")
    print("| --jobs | seconds | CPU seconds | kernels/s | speed-up | efficiency |")
    print("|---:|---:|---:|---:|---:|---:|")
    base = statistics.median(seconds[1])
    for jobs in jobs_list:
        median = statistics.median(seconds[jobs])
        speedup = base / median
        print(f"| {jobs} | {median:.2f} | {statistics.median(cpu[jobs]):.2f} | "
              f"{requests / median:.2f} | {speedup:.2f}x | "
              f"{100 * speedup / jobs:.0f}% |")


if __name__ == "__main__":
    main()
