"""Eight processes start at once on the sample programs (kernels/*.cl), PoCL, empty caches
(issue 29): how many compiles PoCL makes in each store mode, against PoCL's own cache alone.

usage: many_at_once.py [--build build] [--runs 3] [--processes 8]
Each run, in alternating order, from fresh caches shared by the processes (one POCL_CACHE_DIR,
one JITCACHE_DIR), each process bench_first_run over every sample:
  PoCL       `bench_first_run pocl`: PoCL's own cache alone
  default    `bench_first_run jitcache`, JITCACHE_OPENCL_STORE unset (detach), then
             `jitcache store --wait`
  wait       the same with JITCACHE_OPENCL_STORE=wait
and one process alone (jitcache, default mode) for the CPU time of one process's compiles.
Counted: PoCL's compiles ("Writing program.bc" lines of POCL_DEBUG=llvm in the processes'
output: a build over PoCL's warm cache writes none), jitcache's `compiles` and `warm_builds`
(`jitcache stats --json` after the wait), the processes that built every program, and the
processes' CPU time (their own and their children's) against the process alone. After the wait
a new process must hit every program. Prints a Markdown table of the medians.
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "core"))
import many_processes  # noqa: E402 (its run_all)
from first_run import loadavg  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--processes", type=int, default=8)
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    driver = os.path.join(build, "bench", "opencl", "bench_first_run")
    cli = os.path.join(build, "tools", "jitcache", "jitcache")
    kernels = os.path.join(ROOT, "kernels")
    files = sorted(glob.glob(os.path.join(kernels, "*.cl")))
    n = args.processes
    rows, loads = {}, []

    def measure(name, mode, root, count):
        """count processes of bench_first_run `mode` at once; a row of measurements."""
        env = {"POCL_CACHE_DIR": os.path.join(root, "pocl"), "POCL_KERNEL_CACHE": "1",
               "POCL_DEBUG": "llvm", "JITCACHE_DIR": os.path.join(root, "jitcache")}
        store = {"default": None, "wait": "wait"}.get(name.split()[0])
        if store:
            env["JITCACHE_OPENCL_STORE"] = store
        os.environ.pop("JITCACHE_OPENCL_STORE", None)  # unset: the default mode
        wall, outs = many_processes.run_all([driver, mode, kernels] + files, count,
                                            lambda i: env)
        lines = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs
                 if out.strip()]
        row = {"wall": wall, "pocl_compiles": sum(err.count("Writing program.bc")
                                                  for _, err in outs),
               "cpu": sum(l["cpu_s"] + l["children_cpu_s"] for l in lines),
               "ok": sum(sum(l["outcomes"].values()) == len(files) for l in lines)}
        if mode == "jitcache":
            subprocess.run([cli, "store", "--wait", "--timeout", "600"], check=True,
                           env={**os.environ, **env}, stdout=subprocess.DEVNULL)
            stats = json.loads(subprocess.run([cli, "stats", "--json"], env={**os.environ, **env},
                                              check=True, capture_output=True,
                                              text=True).stdout.splitlines()[0])
            row.update({key: stats[key] for key in ("compiles", "warm_builds", "hits", "misses")})
            _, again = many_processes.run_all([driver, mode, kernels] + files, 1, lambda i: env)
            outcomes = json.loads(again[0][0].strip().splitlines()[-1])["outcomes"]
            if outcomes != {"hit": len(files)}:
                raise RuntimeError(f"{name}: after the wait, not every program hit: {outcomes}")
        rows.setdefault(name, []).append(row)

    steps = [("PoCL's own cache only", "pocl", n), ("default (detach)", "jitcache", n),
             ("wait", "jitcache", n), ("default (detach), one process alone", "jitcache", 1)]
    for r in range(args.runs):
        before = loadavg()
        for name, mode, count in (steps if r % 2 == 0 else list(reversed(steps))):
            root = tempfile.mkdtemp(prefix="jitcache-many-at-once-")
            try:
                measure(name, mode, root, count)
            finally:
                shutil.rmtree(root, ignore_errors=True)
        loads.append(f"run {r + 1}: {before} -> {loadavg()}")
        print(loads[-1] + ": " + json.dumps({k: v[-1] for k, v in rows.items()}),
              file=sys.stderr)

    alone = statistics.median(x["cpu"] for x in rows["default (detach), one process alone"])
    med = lambda values: statistics.median(values)
    print(f"{n} processes at once x {len(files)} sample programs, medians of {args.runs} runs\n")
    print("| | processes | PoCL compiles | jitcache `compiles` | `warm_builds` | hits | "
          "processes that built every program | wall | CPU, all processes | CPU / one process "
          "alone |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, _, count) in steps:
        values = rows[name]
        get = lambda key: (f"{med(x[key] for x in values):.0f}" if key in values[0] else "")
        print(f"| {name} | {count} | {get('pocl_compiles')} | {get('compiles')} | "
              f"{get('warm_builds')} | {get('hits')} | {min(x['ok'] for x in values)} of {count}"
              f" | {med(x['wall'] for x in values):.1f} s | {med(x['cpu'] for x in values):.2f} s"
              f" | {med(x['cpu'] for x in values) / alone:.2f}x |")
    print("\nload average (1, 5, 15 min) before -> after: " + "; ".join(loads))
    print("\n" + json.dumps(rows))


if __name__ == "__main__":
    main()
