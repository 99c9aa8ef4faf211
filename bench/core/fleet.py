#!/usr/bin/env python3
"""A simulated fleet on one machine: HOSTS "hosts" (a user tier each) x PROCS processes each,
all cold, building the sample CUDA kernels (NVRTC, --arch sm_80: no GPU needed) at once, with and
without a shared Redis remote tier (signed, and its fleet-wide compile lease).

usage: bench/core/fleet.py [--build build] [--hosts 4] [--procs 4] [--runs 3]
Starts its own redis-server (Debian redis-server) on a free loopback port, persisting nothing.
Compiles are the lines reporting a miss; without the remote each host compiles every kernel, with
it the fleet should compile each once. Prints a Markdown table of medians over the runs.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from redis_server import start_redis  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_fleet(cli, kernels, hosts, procs, remote):
    """One cold run; returns (wall seconds, compiles, failures)."""
    root = tempfile.mkdtemp(prefix="jitcache-fleet-")
    try:
        started = []
        begin = time.monotonic()
        for h in range(hosts):
            env = dict(os.environ, JITCACHE_DIR=os.path.join(root, f"host{h}"),
                       JITCACHE_LOG="error")
            if remote:
                env.update(JITCACHE_REMOTE=remote, JITCACHE_REMOTE_KEY="fleet bench key")
            for _ in range(procs):
                started.append(subprocess.Popen(
                    [cli, "build", "--backend", "cuda", "--arch", "sm_80", "--options",
                     "-I " + os.path.join(ROOT, "kernels"), "--json", *kernels],
                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        compiles = failures = 0
        for p in started:
            out, _ = p.communicate()
            failures += p.returncode != 0
            compiles += sum(json.loads(line)["outcome"] == "miss" for line in out.splitlines())
        return time.monotonic() - begin, compiles, failures
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cli = os.path.join(args.build, "tools", "jitcache", "jitcache")
    kernels = sorted(glob.glob(os.path.join(ROOT, "kernels", "*.cu")))
    workdir = tempfile.mkdtemp(prefix="jitcache-fleet-redis-")
    server, port = start_redis(workdir)
    try:
        print(f"{args.hosts} hosts x {args.procs} processes, {len(kernels)} distinct kernels, "
              f"medians of {args.runs} cold runs\n")
        print("| remote | compiles | wall (s) | failed processes |\n|---|---|---|---|")
        for name, remote in (("none", None), ("redis (signed)", f"redis://127.0.0.1:{port}")):
            results = []
            for run in range(args.runs):
                if remote:  # cold: a prefix of its own per run
                    remote_url = f"{remote}?prefix=fleet{run}:"
                else:
                    remote_url = None
                results.append(run_fleet(cli, kernels, args.hosts, args.procs, remote_url))
            print(f"| {name} | {statistics.median(r[1] for r in results):g} | "
                  f"{statistics.median(r[0] for r in results):.2f} | "
                  f"{sum(r[2] for r in results)} |")
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
