#!/usr/bin/env python3
"""CuPy's workload (rtc_front_end_gpu.py's, CUPY_CACHE_IN_MEMORY=1) under two or more builds of
the NVRTC front-end, side by side in fresh processes, alternated round by round with runs
without it: each build's first run in a new user tier (every kernel a miss) and a second run on
that tier (every kernel a hit), checked with `jitcache stats`. Times are the workload's own time
in the process (CuPy's import and CUDA's start left out), medians over the rounds.

usage (on a machine with CuPy, from the repository root):
  bench/cuda/front_end_ab.py ROUNDS NAME=BUILD_DIR [NAME=BUILD_DIR]...
e.g. bench/cuda/front_end_ab.py 6 before=build-before after=build
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtc_front_end_gpu import CUPY_WORKLOAD, counters, nvrtc_lib_dir  # noqa: E402

TIMED = ("import time as _t, sys as _s\n_t0 = _t.perf_counter()\n" + CUPY_WORKLOAD +
         "\nprint('WORKLOAD_S', _t.perf_counter() - _t0, file=_s.stderr)\n")


def run(env):
    done = subprocess.run([sys.executable, "-c", TIMED],
                          env={**os.environ, "CUPY_CACHE_IN_MEMORY": "1", **env},
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    seconds = [float(line.split()[1]) for line in done.stderr.splitlines()
               if line.startswith("WORKLOAD_S")][0]
    return json.loads(done.stdout.strip().splitlines()[-1]), seconds


def front_end(build, cache, lib):
    return {"JITCACHE_DIR": cache, "LD_PRELOAD": f"{build}/interposers/libjitcache-nvrtc.so",
            "LD_LIBRARY_PATH": ":".join(filter(None, [lib, os.environ.get("LD_LIBRARY_PATH")]))}


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        raise SystemExit(__doc__)
    rounds = int(sys.argv[1])
    builds = dict(a.split("=", 1) for a in sys.argv[2:])
    lib = nvrtc_lib_dir()
    first = {"without": [], **{name: [] for name in builds}}
    warm = {name: [] for name in builds}
    reference = None
    failed = False
    for r in range(rounds):
        result, seconds = run({})
        first["without"].append(seconds)
        reference = reference or result
        for name, build in builds.items():
            with tempfile.TemporaryDirectory() as cache:
                cold, first_s = run(front_end(build, cache, lib))
                hits0, misses0 = counters(f"{build}/tools/jitcache/jitcache", cache)
                hot, warm_s = run(front_end(build, cache, lib))
                hits, misses = counters(f"{build}/tools/jitcache/jitcache", cache)
            first[name].append(first_s)
            warm[name].append(warm_s)
            # cumsum varies without the front-end too (rtc_front_end_gpu.py)
            differ = [k for k in reference if k != "cumsum" and
                      (cold.get(k) != reference[k] or hot.get(k) != reference[k])]
            ok = not differ and misses0 > 0 and hits - hits0 == misses0 and misses == misses0
            failed |= not ok
            print(f"round {r} {name}: first {first_s:.3f} s ({misses0} misses), warm "
                  f"{warm_s:.3f} s ({hits - hits0} hits, {misses - misses0} misses)"
                  f"{'' if not differ else ', results differ: ' + ', '.join(differ)}", flush=True)
        print(f"round {r} without: {first['without'][-1]:.3f} s", flush=True)
    base = statistics.median(first["without"])
    for name, times in first.items():
        median = statistics.median(times)
        print(f"first run, {name}: median {median:.3f} s ({median / base:.3f}x without) "
              f"[{', '.join(f'{t:.2f}' for t in times)}]")
    for name, times in warm.items():
        print(f"second run, {name}: median {statistics.median(times):.3f} s "
              f"[{', '.join(f'{t:.2f}' for t in times)}]")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
