"""The edit-and-run loop on PoCL in the default store mode (issue 29): a program run again every
--interval seconds while its stores are pending, against one run whose store worker is alone.

usage: edit_loop.py [--build build] [--runs 1] [--interval 5] [--count 26] [--programs 36]
                    [--kernels 16] [--timeout 600]
Each repetition, from fresh POCL_CACHE_DIR and JITCACHE_DIR and in alternating order:
  loop   --count runs of bench_first_run (make_workload.py's workload), one every --interval
         seconds (the next at once when one runs longer), JITCACHE_OPENCL_STORE=detach
  alone  one such run, then nothing until its store worker is done
Measured every 100 ms: the `jitcache store` processes of the cache, the store workers among
them (the detached ones: nice 19, not a child one of them forked; a process that hands over
while a worker is alive starts nothing, and one that finds the lock taken exits before
detaching), those that hold the worker lock, their CPU time (their children's included), and the
request files pending. "every program stored" is from the first run's start until the pending
folder was left empty for the last time: then every program is stored, which the run after it
checks (every program a hit). The target: never more than one worker at once, and the loop's
time within 1.2x of the time alone. A store worker runs at idle priority, which on a machine that
is never idle (a shared one) means never: as first_run.py does, it is moved to the normal class at
nice 19, in both, so the two differ only by the runs of the loop.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

import first_run


def stat_of(pid):
    """The fields of /proc/PID/stat after the command's name (state, ppid, ...), or None once
    the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def holds_worker_lock(pid, lock):
    """Whether the process pid holds the worker lock (the file lock): its lock is listed in the
    fdinfo of its descriptor of that file."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == lock:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    if "FLOCK" in f.read():
                        return True
    except OSError:
        pass
    return False


class Sampler(threading.Thread):
    """Samples the store processes of the folder pending every 100 ms until stop()."""

    def __init__(self, pending, start):
        super().__init__(daemon=True)
        self.pending, self.start_time = pending, start
        self.lock = os.path.join(pending, "worker.lock")
        self.max_processes = self.max_workers = self.max_holders = 0
        self.workers, self.cpu = set(), {}
        self.held, self.seen = {}, {}  # per worker: when last seen holding the lock, alive
        self.emptied = None  # when the folder was last seen going from non-empty to empty
        self.done = threading.Event()

    def run(self):
        busy = False
        while not self.done.is_set():
            pids = first_run.store_processes(self.pending)
            stats = {pid: stat_of(pid) for pid in pids}
            # A worker: detached (nice 19), and not a child it forked (PoCL starts the linker
            # so: until its exec, the child has the worker's command line, nice and lock).
            workers = [pid for pid, st in stats.items()
                       if st and int(st[16]) == 19 and int(st[1]) not in stats]
            self.max_processes = max(self.max_processes, len(pids))
            self.max_workers = max(self.max_workers, len(workers))
            self.workers.update(workers)
            now = time.perf_counter()
            holders = [pid for pid in workers if holds_worker_lock(pid, self.lock)]
            self.max_holders = max(self.max_holders, len(holders))
            self.held.update({pid: now for pid in holders})
            self.seen.update({pid: now for pid in workers})
            for pid in workers:
                try:
                    os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
                except OSError:
                    pass
                value = first_run.cpu_of(pid)
                if value is not None:
                    self.cpu[pid] = value
            pending = bool(first_run.request_files(self.pending))
            if busy and not pending:
                self.emptied = time.perf_counter() - self.start_time
            busy = pending
            time.sleep(0.1)

    def stop(self):
        self.done.set()
        self.join()

    def exit_s(self):
        """The longest a worker was seen alive after it let go of the lock (its exit)."""
        return max((self.seen[pid] - self.held[pid] for pid in self.held), default=0.0)


def runs(driver, work, files, env, count, interval, timeout):
    """Runs the workload count times, one every interval seconds, sampling the store processes;
    then waits until nothing is pending, and runs it once more, which must hit every program.
    The measurements of the repetition."""
    pending = os.path.join(env["JITCACHE_DIR"], "v1", "pending")
    start = time.perf_counter()
    sampler = Sampler(pending, start)
    sampler.start()
    outcomes, cpu = [], []
    first_all_hits = None
    try:
        for i in range(count):
            time.sleep(max(0.0, start + i * interval - time.perf_counter()))
            began = time.perf_counter() - start
            _, line, _ = first_run.run([driver, "jitcache", work] + files, env)
            outcomes.append(line["outcomes"])
            cpu.append(line["cpu_s"] + line["children_cpu_s"])
            if first_all_hits is None and line["outcomes"] == {"hit": len(files)}:
                first_all_hits = began
        while first_run.request_files(pending) or sampler.emptied is None:
            if time.perf_counter() - start > timeout:
                raise RuntimeError(f"stores still pending after {timeout} s")
            time.sleep(0.1)
        time.sleep(0.3)  # a worker that just emptied the folder is seen exiting
    finally:
        sampler.stop()
    _, line, _ = first_run.run([driver, "jitcache", work] + files, env)
    if line["outcomes"] != {"hit": len(files)}:
        raise RuntimeError(f"after the stores, not every program hit: {line['outcomes']}")
    return {"stored_s": sampler.emptied, "max_workers": sampler.max_workers,
            "max_holders": sampler.max_holders, "exit_s": sampler.exit_s(),
            "max_processes": sampler.max_processes, "workers": len(sampler.workers),
            "worker_cpu_s": sum(sampler.cpu.values()), "first_all_hits_s": first_all_hits,
            "run_cpu_s": statistics.median(cpu), "runs": len(outcomes)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=1, help="repetitions (medians)")
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--count", type=int, default=26, help="runs of the loop")
    parser.add_argument("--programs", type=int, default=36)
    parser.add_argument("--kernels", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    driver = os.path.abspath(os.path.join(args.build, "bench", "opencl", "bench_first_run"))
    rows = {"loop": [], "alone": []}
    loads = []
    for r in range(args.runs):
        root = tempfile.mkdtemp(prefix="jitcache-edit-loop-")
        try:
            work = os.path.join(root, "workload")
            files = first_run.write_workload(work, args.programs, args.kernels)
            env = lambda name: {"POCL_CACHE_DIR": os.path.join(root, "pocl-" + name),
                                "JITCACHE_DIR": os.path.join(root, "jitcache-" + name),
                                "JITCACHE_OPENCL_STORE": "detach"}
            steps = [("loop", args.count), ("alone", 1)]
            for name, count in (steps if r % 2 == 0 else reversed(steps)):
                before = first_run.loadavg()
                rows[name].append(runs(driver, work, files, env(name), count, args.interval,
                                       args.timeout))
                loads.append(f"{name} {r + 1}: {before} -> {first_run.loadavg()}")
                print(f"{name} {r + 1}: {json.dumps(rows[name][-1])}", file=sys.stderr)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    med = lambda name, field: statistics.median(x[field] for x in rows[name])
    ratio = statistics.median(a["stored_s"] / b["stored_s"]
                              for a, b in zip(rows["loop"], rows["alone"]))
    print(f"{args.programs} programs x {args.kernels} kernels; loop: {args.count} runs every "
          f"{args.interval:g} s; medians of {args.runs} repetitions\n")
    print("| | every program stored, from the first run's start | / alone | store workers "
          "holding the lock at once (max) | store workers alive at once, one exiting included "
          "(max) | workers started | a worker's exit after the lock (max) | workers' CPU | "
          "workers' CPU / alone | a run's CPU (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    cpu_ratio = statistics.median(a["worker_cpu_s"] / b["worker_cpu_s"]
                                  for a, b in zip(rows["loop"], rows["alone"]))
    for name, label in (("loop", f"{args.count} runs, one every {args.interval:g} s"),
                        ("alone", "one run, its store worker alone")):
        print(f"| {label} | {med(name, 'stored_s'):.1f} s | "
              f"{ratio if name == 'loop' else 1.0:.2f}x | "
              f"{max(x['max_holders'] for x in rows[name])} | "
              f"{max(x['max_workers'] for x in rows[name])} | {med(name, 'workers'):.0f} | "
              f"{max(x['exit_s'] for x in rows[name]):.1f} s | "
              f"{med(name, 'worker_cpu_s'):.1f} s | "
              f"{cpu_ratio if name == 'loop' else 1.0:.2f}x | {med(name, 'run_cpu_s'):.2f} s |")
    print("\nload average (1, 5, 15 min) before -> after: " + "; ".join(loads))
    print("\n" + json.dumps(rows))


if __name__ == "__main__":
    main()
