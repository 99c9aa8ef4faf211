#!/usr/bin/env python3
"""An MPI job of RANKS ranks on one machine building the sample kernels, cold then warm, in each
way a job can share its compiles: no cache; one shared user tier (leases); a user tier per rank
(the workaround users adopt); a user tier per rank with the Redis remote tier; the cohort
(build_programs, or compile_together, over MPI, a user tier per rank: no shared filesystem).
--backend opencl (the default) builds the OpenCL kernels on PoCL; --backend cuda compiles the CUDA
kernels (kernels/*.cu) offline for --arch with NVRTC, no GPU needed, and in each run times each kernel
compiled alone (a job of one rank, no cache: the `single` mode; medians), so that the cohort's cold wall
can be set against the slowest single compile. Each run is a fresh `mpirun` (and fresh PoCL
caches, so that PoCL's own cache never answers); the table gives medians over RUNS: the job's
wall time (slowest rank), all ranks' CPU time, compiles (cuda: NVRTC compiles). The machine's
/proc/loadavg is printed before and after: on a shared machine, trust CPU time and compiles over
wall time.

usage: bench/mpi/run.py [--build build] [--backend opencl|cuda] [--arch sm_90] [--ranks 16]
                        [--runs 3] [--modes none,shared,per_rank,redis,cohort]
Starts its own redis-server (Debian redis-server) on a free loopback port, persisting nothing,
when the redis mode runs; without redis-server the redis mode is skipped unless --modes names it.
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
# The CUDA kernels bench_mpi compiles (its cuda_work), each timed alone for --backend cuda.
CUDA_KERNELS = ["block_reduce.cu", "matmul_tuned.cu", "saxpy.cu", "scale.cu", "transpose.cu"]


def run_job(binary, mode, ranks, root, env, args, extra=()):
    """One mpirun of bench_mpi MODE for args.backend (extra: more of its options); returns the
    JSON line of rank 0."""
    command = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks)]
    backend_args = ["--backend", args.backend] + list(extra)
    if args.backend == "cuda":
        backend_args += ["--arch", args.arch]
    pocl = None
    if args.backend == "opencl":
        pocl = os.path.join(root, "pocl-" + str(time.monotonic_ns()))
        wrapper = (f'POCL_CACHE_DIR={pocl}/$OMPI_COMM_WORLD_RANK exec "$0" "$@"')
        command += ["sh", "-c", wrapper]
    command += [binary, mode, root, os.path.join(ROOT, "kernels")] + backend_args
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"run.py: {mode} failed:\n{out.stdout}\n{out.stderr}")
    if pocl:
        shutil.rmtree(pocl, ignore_errors=True)
    return json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--backend", choices=["opencl", "cuda"], default="opencl")
    parser.add_argument("--arch", default="sm_90", help="cuda: the architecture compiled for")
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", help="default: " + ",".join(MODES))
    args = parser.parse_args()
    modes = (args.modes or ",".join(MODES)).split(",")
    if "redis" in modes and not shutil.which("redis-server"):
        if args.modes:
            raise SystemExit("run.py: the redis mode needs redis-server (Debian redis-server)")
        print("redis: skipped (no redis-server)")
        modes.remove("redis")
    binary = os.path.join(args.build, "bench", "mpi", "bench_mpi")
    workdir = tempfile.mkdtemp(prefix="jitcache-bench-mpi-")
    server, port = start_redis(workdir) if "redis" in modes else (None, None)
    results = {}
    single = {}
    try:
        print("loadavg before:", open("/proc/loadavg").read().strip())
        for run in range(args.runs):
            # cuda: each kernel compiled alone by a job of one rank with no cache, in every run
            # (the first run's pays for the files' first reads): the cohort's cold wall is at
            # best the slowest of these plus the hand-over of the binaries.
            for kernel in CUDA_KERNELS if args.backend == "cuda" else []:
                root = tempfile.mkdtemp(prefix="single-", dir=workdir)
                result = run_job(binary, "single", 1, root, dict(os.environ), args,
                                 ["--kernel", kernel])
                single.setdefault(kernel, []).append(result["wall_s"])
                print(json.dumps({"run": run, "single": kernel, **result}), flush=True)
                shutil.rmtree(root, ignore_errors=True)
            for mode in modes:
                root = tempfile.mkdtemp(prefix=f"{mode}-", dir=workdir)
                env = dict(os.environ)
                env.pop("JITCACHE_REMOTE", None)
                if server:
                    env["JITCACHE_REMOTE"] = (f"redis://127.0.0.1:{port}?unsigned=1"
                                              f"&prefix={args.backend}-run{run}-{mode}")
                for start in ("cold", "warm"):
                    result = run_job(binary, mode, args.ranks, root, env, args)
                    results.setdefault((mode, start), []).append(result)
                    print(json.dumps({"run": run, "start": start, **result}), flush=True)
                shutil.rmtree(root, ignore_errors=True)
        print("loadavg after:", open("/proc/loadavg").read().strip())
    finally:
        if server:
            server.kill()
        shutil.rmtree(workdir, ignore_errors=True)

    print()
    single = {kernel: statistics.median(walls) for kernel, walls in single.items()}
    slowest = max(single.values()) if single else None
    ratio = " wall / slowest single |" if slowest else ""
    print(f"| mode | start | wall s |{ratio} CPU s (all ranks) | compiles | ({args.backend}, "
          f"{args.ranks} ranks, medians of {args.runs}) |")
    print("|---|---|---|" + ("---|" if slowest else "") + "---|---|---|")
    for mode in modes:
        for start in ("cold", "warm"):
            rows = results[(mode, start)]
            med = lambda key: statistics.median(r[key] for r in rows)
            cell = ""
            if slowest:
                cell = f" {med('wall_s') / slowest:.2f}x |" if start == "cold" else " |"
            print(f"| {mode} | {start} | {med('wall_s'):.2f} |{cell} {med('cpu_s'):.2f} | "
                  f"{med('compiles'):.0f} | |")
    if single:
        print()
        kernel = max(single, key=single.get)
        print(f"slowest single compile ({args.arch}, one rank, no cache): {kernel} "
              f"{slowest:.2f} s; each: "
              + ", ".join(f"{k} {v:.2f} s" for k, v in single.items()))


if __name__ == "__main__":
    main()
