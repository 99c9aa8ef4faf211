"""The first run of many programs on PoCL (issue 17), side by side in one run: PoCL's own cache
alone, PyOpenCL with its cache off, jitcache's first run (JITCACHE_OPENCL_STORE=wait and
=detach), the run after the stores finished (jitcache against PoCL's cache), and the
edit-and-run loop (one program's header changed). Medians of --runs runs.

usage: first_run.py [--build build] [--runs 3] [--programs 24] [--kernels 24] [--no-pyopencl]
                    [--no-wait] [--store-wait]
Each run: fresh POCL_CACHE_DIR and JITCACHE_DIR, a workload written by make_workload.py. Wall
time is from starting the process to its exit; CPU is the process's own (getrusage, children
separate: the short-lived process that starts the detached store). For detach, the detached
`jitcache store` process is followed to its end: how long until every program was stored and
the CPU time it used; with --store-wait, `jitcache store --wait` is run at once after the first
run's exit and timed to its own exit (the issue-29 recipe: the second run follows it). What is
compared (PoCL alone and jitcache's first run, second run and
edit) runs side by side, in alternating order from one run to the next.
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

HERE = os.path.dirname(os.path.abspath(__file__))


def run(argv, env):
    """Runs argv to its exit; (wall_s, JSON of its last line, rusage of the process)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({status}):\n{err}")
    return wall, json.loads(out.strip().splitlines()[-1]), usage


def loadavg():
    """The load averages over 1, 5 and 15 minutes (the machine may be shared)."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def write_workload(work, programs, kernels):
    """Writes make_workload.py's workload into work; the program files."""
    return subprocess.run([sys.executable, os.path.join(HERE, "make_workload.py"), work,
                           "--programs", str(programs), "--kernels", str(kernels)], check=True,
                          capture_output=True, text=True).stdout.split()


def store_processes(pending):
    """Pids of the `jitcache store` processes working on files of the folder pending."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"store" in args and any(a.startswith(pending.encode()) for a in args):
            pids.append(int(pid))
    return pids


def request_files(pending):
    """The request files waiting in the folder pending (not the store worker's lock, which
    stays)."""
    if not os.path.isdir(pending):
        return []
    return [f for f in os.listdir(pending) if f != "worker.lock"]


def cpu_of(pid):
    """User + system CPU seconds of a live process and of its waited-for children (PoCL runs
    the linker as a child), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def follow_stores(pending, since):
    """Waits until no request file is left in pending; (seconds since `since`, CPU seconds of
    the store processes, last seen). A store process runs at idle priority, which on a machine
    that is never idle (a shared one) means never: it is moved to the normal class, at nice 19
    (as any process of its user may do)."""
    cpu = {}
    while True:
        for pid in store_processes(pending):
            try:
                os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                pass
            value = cpu_of(pid)
            if value is not None:
                cpu[pid] = value
        if not request_files(pending):
            return time.perf_counter() - since, sum(cpu.values())
        time.sleep(0.05)


# Each row's reference: the row it is compared with (wall and CPU ratios).
BASELINES = {
    "first run": "PoCL's own cache only: first run",
    "second run": "PoCL's own cache only: second run",
    "edit one": "edit one program's header: PoCL's own cache",
}


def reference_of(name):
    return next((base for key, base in BASELINES.items() if key in name and base != name), None)


def table(rows):
    """The markdown table of medians, each row against its reference (BASELINES): the ratio of
    the medians, and the median of the runs' own ratios (each run's row against the reference
    measured beside it, the two in alternating order), which the machine's drift between runs
    does not move."""
    med = {name: {field: statistics.median(x[field] for x in values)
                  for field in ("wall", "cpu", "children")} for name, values in rows.items()}
    lines = ["| run | wall to exit | CPU, process | CPU, children | wall / reference | "
             "CPU / reference | wall / reference, run by run | CPU / reference, run by run |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, m in med.items():
        base = reference_of(name)
        ratios = " | | | "
        if base and "detached store" not in name:
            ref = med[base]
            pairs = list(zip(rows[name], rows[base]))
            by_run = lambda f: statistics.median(a[f] / b[f] for a, b in pairs)
            ratios = (f"{m['wall'] / ref['wall']:.2f}x | {m['cpu'] / ref['cpu']:.2f}x | "
                      f"{by_run('wall'):.2f}x | {by_run('cpu'):.2f}x")
        lines.append(f"| {name} | {m['wall']:.2f} s | {m['cpu']:.2f} s | {m['children']:.2f} s "
                     f"| {ratios} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--programs", type=int, default=24)
    parser.add_argument("--kernels", type=int, default=24)
    parser.add_argument("--no-pyopencl", action="store_true")
    parser.add_argument("--no-wait", action="store_true",
                        help="leave out JITCACHE_OPENCL_STORE=wait (the slow store in the process)")
    parser.add_argument("--store-wait", action="store_true",
                        help="after detach's first run, `jitcache store --wait` until stored")
    args = parser.parse_args()
    driver = os.path.abspath(os.path.join(args.build, "bench", "opencl", "bench_first_run"))
    cli = os.path.abspath(os.path.join(args.build, "tools", "jitcache", "jitcache"))
    python = shutil.which("python3", path="/usr/bin") or sys.executable
    rows = {}

    def add(name, wall, cpu, children=0.0, extra=None):
        rows.setdefault(name, []).append({"wall": wall, "cpu": cpu, "children": children,
                                          **(extra or {})})

    def alternate(r, steps):
        """Runs steps in order on even runs, reversed on odd ones: what is compared is measured
        side by side, neither always first."""
        for step in (steps if r % 2 == 0 else list(reversed(steps))):
            step()

    loads = []
    for r in range(args.runs):
        before = loadavg()
        root = tempfile.mkdtemp(prefix="jitcache-first-run-")
        try:
            work = os.path.join(root, "workload")
            files = write_workload(work, args.programs, args.kernels)
            cmd = lambda mode: [driver, mode, work] + files
            env = {"POCL_CACHE_DIR": os.path.join(root, "pocl-only"), "POCL_KERNEL_CACHE": "1"}
            jit_env = lambda mode: {"POCL_CACHE_DIR": os.path.join(root, "pocl-" + mode),
                                    "JITCACHE_DIR": os.path.join(root, "jitcache-" + mode),
                                    "JITCACHE_OPENCL_STORE": mode}
            pending = os.path.join(root, "jitcache-detach", "v1", "pending")

            def pocl(name):
                wall, line, _ = run(cmd("pocl"), env)
                add(name, wall, line["cpu_s"], line["children_cpu_s"])

            def jitcache(name, mode="detach", hits=None):
                wall, line, _ = run(cmd("jitcache"), jit_env(mode))
                start_after = time.perf_counter()
                if hits is not None:
                    assert line["outcomes"] == {"hit": hits}, line
                add(name, wall, line["cpu_s"], line["children_cpu_s"])
                return start_after

            def detach_first():
                start_after = jitcache("jitcache first run, JITCACHE_OPENCL_STORE=detach")
                if not args.store_wait:
                    until, worker_cpu = follow_stores(pending, start_after)
                    add("detached store: until every program is stored (after exit)", until,
                        worker_cpu)
                    return
                waiter = subprocess.Popen([cli, "store", "--wait", "--timeout", "600"],
                                          env={**os.environ, **jit_env("detach")},
                                          stdout=subprocess.DEVNULL)
                _, worker_cpu = follow_stores(pending, start_after)
                if waiter.wait() != 0:
                    raise RuntimeError("jitcache store --wait failed")
                add("detached store: `jitcache store --wait` after exit, to its exit",
                    time.perf_counter() - start_after, worker_cpu)

            alternate(r, [lambda: pocl("PoCL's own cache only: first run"), detach_first])
            if not args.no_pyopencl:
                env_py = {"POCL_CACHE_DIR": os.path.join(root, "pyopencl"),
                          "PYOPENCL_NO_CACHE": "1"}
                wall, line, _ = run([python, os.path.join(HERE, "pyopencl_first_run.py"), work]
                                    + files, env_py)
                add("PyOpenCL, its cache off: first run", wall, line["cpu_s"])
            if not args.no_wait:
                jitcache("jitcache first run, JITCACHE_OPENCL_STORE=wait", "wait")
                jitcache("jitcache second run (after wait's stores)", "wait", len(files))
            alternate(r, [lambda: pocl("PoCL's own cache only: second run"),
                          lambda: jitcache("jitcache second run (after detach's stores)",
                                           hits=len(files))])
            # The edit-and-run loop: one program's own header changes.
            with open(os.path.join(work, "prog_00.h"), "a") as f:
                f.write(f"// edited {r}\n")
            alternate(r, [lambda: pocl("edit one program's header: PoCL's own cache"),
                          lambda: follow_stores(pending, jitcache(
                              "edit one program's header: jitcache (detach)"))])
        finally:
            shutil.rmtree(root, ignore_errors=True)
        loads.append(f"run {r + 1}: {before} -> {loadavg()}")
        print(f"run {r + 1} of {args.runs} done (load average {loads[-1]})", file=sys.stderr)

    print(f"{args.programs} programs x {args.kernels} kernels, medians of {args.runs} runs\n")
    print(table(rows))
    print("\nload average (1, 5, 15 min) before -> after: " + "; ".join(loads))
    print("\n" + json.dumps(rows))


if __name__ == "__main__":
    main()
