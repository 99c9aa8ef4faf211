#!/usr/bin/env python3
"""An MPI job of RANKS ranks on one machine building the sample OpenCL kernels (PoCL), cold then
warm, in each way a job can share its compiles: no cache; one shared user tier (leases); a user
tier per rank (the workaround users adopt); a user tier per rank with the Redis remote tier; the
cohort (build_programs over MPI, a user tier per rank: no shared filesystem). Each run is a
fresh `mpirun` (and fresh PoCL caches, so that PoCL's own cache never answers); the table gives
medians over RUNS: the job's wall time (slowest rank), all ranks' CPU time, compiles. The
machine's /proc/loadavg is printed before and after: on a shared machine, trust CPU time and
compiles over wall time.

usage: bench/mpi/run.py [--build build] [--ranks 16] [--runs 3] [--modes none,shared,...]
Starts its own redis-server (Debian redis-server) on a free loopback port, persisting nothing.
"""
import argparse
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
MODES = ["none", "shared", "per_rank", "redis", "cohort"]


def run_job(binary, mode, ranks, root, env):
    """One mpirun; returns the JSON line of rank 0."""
    pocl = os.path.join(root, "pocl-" + str(time.monotonic_ns()))
    wrapper = (f'POCL_CACHE_DIR={pocl}/$OMPI_COMM_WORLD_RANK exec "$0" "$@"')
    command = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks),
               "sh", "-c", wrapper, binary, mode, root, os.path.join(ROOT, "kernels")]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"run.py: {mode} failed:\n{out.stdout}\n{out.stderr}")
    shutil.rmtree(pocl, ignore_errors=True)
    return json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    binary = os.path.join(args.build, "bench", "mpi", "bench_mpi")
    workdir = tempfile.mkdtemp(prefix="jitcache-bench-mpi-")
    server, port = start_redis(workdir)
    results = {}
    try:
        print("loadavg before:", open("/proc/loadavg").read().strip())
        for run in range(args.runs):
            for mode in args.modes.split(","):
                root = tempfile.mkdtemp(prefix=f"{mode}-", dir=workdir)
                env = dict(os.environ)
                env["JITCACHE_REMOTE"] = (f"redis://127.0.0.1:{port}?unsigned=1"
                                          f"&prefix=run{run}-{mode}")
                for start in ("cold", "warm"):
                    result = run_job(binary, mode, args.ranks, root, env)
                    results.setdefault((mode, start), []).append(result)
                    print(json.dumps({"run": run, "start": start, **result}), flush=True)
                shutil.rmtree(root, ignore_errors=True)
        print("loadavg after:", open("/proc/loadavg").read().strip())
    finally:
        server.kill()
        shutil.rmtree(workdir, ignore_errors=True)

    print()
    print(f"| mode | start | wall s | CPU s (all ranks) | compiles | ({args.ranks} ranks, "
          f"medians of {args.runs}) |")
    print("|---|---|---|---|---|---|")
    for mode in args.modes.split(","):
        for start in ("cold", "warm"):
            rows = results[(mode, start)]
            med = lambda key: statistics.median(r[key] for r in rows)
            print(f"| {mode} | {start} | {med('wall_s'):.2f} | {med('cpu_s'):.2f} | "
                  f"{med('compiles'):.0f} | |")


if __name__ == "__main__":
    main()
