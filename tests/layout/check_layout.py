#!/usr/bin/env python3
"""The layout test: in each library, module and program given, the functions that
cmake/layout/hot_functions.txt lists (the code a fresh process's hit runs) lie together, in as
few 64 KB windows as their size needs (each window first touched costs a page fault), and the
list still names the code: most of its names are functions of the files given.

usage: check_layout.py COMPILER HOT_FUNCTIONS FILE...
       check_layout.py COMPILER --current HOT_FUNCTIONS BUILD CUDA_INCLUDE
COMPILER: the build's, "ID VERSION" as CMake names it. The second form: the list still names
what a hit runs now. It records the NVRTC front-end's hit in BUILD with the list's own script
(record_hot_functions.py --only, callgrind) and checks that nearly every function that hit ran
is listed. Both ask whether the list is current only of a build by the compiler it was recorded
with (its first line): another names its clones and inlines differently, so the second form
exits with 77 (skipped) there, and the first checks the placement alone.
Exit status 0 when the checks hold; 1, naming each file and what failed, when not.
"""
import os
import subprocess
import sys
import tempfile

WINDOW = 64 << 10
SLACK_WINDOWS = 2  # what straddling and the sections placed apart (start-up code) may add
LEAST_PRESENT = 0.6  # fewer: out of date (a build without some backends lacks their functions)
LEAST_COVERED = 0.95  # of the functions a hit runs now, the share the list must name
SKIPPED = 77  # ctest's SKIP_RETURN_CODE for this test


def text_symbols(path):
    """{name: {(address, size), ...}} of the functions `path` defines: a name may be several
    functions (a local function of the same name in several files), which the linker places
    together by that name."""
    out = subprocess.run(["nm", "--defined-only", "-S", path], check=True, capture_output=True,
                         text=True).stdout
    symbols = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in "tTwW":
            symbols.setdefault(fields[3], set()).add((int(fields[0], 16), int(fields[1], 16)))
    return symbols


def names(path):
    """The function names a list file holds, one per line ('#' lines aside)."""
    return [line.strip() for line in open(path) if line.strip() and not line.startswith("#")]


def recorded_with(path):
    """The compiler a list names on its first line ("# compiler: ID VERSION"), or ""."""
    first = open(path).readline().strip()
    return first.split(":", 1)[1].strip() if first.startswith("# compiler:") else ""


def current(hot_path, build, cuda_include):
    """0 when the list names nearly every function the NVRTC front-end's hit runs in `build`."""
    record = os.path.join(os.path.dirname(hot_path), "record_hot_functions.py")
    with tempfile.TemporaryDirectory() as tmp:
        recorded_path = os.path.join(tmp, "recorded.txt")
        subprocess.run([sys.executable, record, "--build", build, "--cuda-include", cuda_include,
                        "--only", "nvrtc front-end, scale", "--out", recorded_path], check=True)
        recorded = names(recorded_path)
    if not recorded:
        print("FAILED the NVRTC front-end's hit recorded no function (its scenario not run?)")
        return 1
    missing = sorted(set(recorded) - set(names(hot_path)))
    share = 1 - len(missing) / len(recorded)
    print(f"the list names {share:.1%} of the {len(recorded)} functions the hit ran")
    if share >= LEAST_COVERED:
        return 0
    print("FAILED the list is out of date: run cmake/layout/record_hot_functions.py again; "
          "not listed: " + " ".join(missing[:20]))
    return 1


def main():
    compiler = sys.argv[1]
    if sys.argv[2] == "--current":
        if recorded_with(sys.argv[3]) != compiler:
            print(f"skipped: the list was recorded with {recorded_with(sys.argv[3])}, "
                  f"this build is {compiler}'s")
            return SKIPPED
        return current(*sys.argv[3:6])
    same_compiler = recorded_with(sys.argv[2]) == compiler
    hot = names(sys.argv[2])
    failures, present = [], set()
    for path in sys.argv[3:]:
        symbols = text_symbols(path)
        ranges = {span for name in hot for span in symbols.get(name, ())}  # aliases once
        present.update(name for name in hot if name in symbols)
        if not ranges:
            failures.append(f"{path}: none of the listed functions")
            continue
        size = sum(length for _, length in ranges)
        windows = {w for start, length in ranges
                   for w in range(start // WINDOW, (start + max(length, 1) - 1) // WINDOW + 1)}
        needed = -(-size // WINDOW)
        print(f"{path}: {len(ranges)} listed functions, {size} bytes, in {len(windows)} windows "
              f"of 64 KB (at least {needed})")
        if len(windows) > needed + SLACK_WINDOWS:
            failures.append(f"{path}: the listed functions span {len(windows)} windows, "
                            f"{needed} would hold them: the linker did not place them together")
    share = len(present) / len(hot)
    print(f"{len(present)} of the {len(hot)} listed functions exist ({share:.0%})")
    if not same_compiler:
        print(f"the list was recorded with {recorded_with(sys.argv[2])}, this build is "
              f"{compiler}'s: whether it is current is not checked")
    elif share < LEAST_PRESENT:
        failures.append(f"only {share:.0%} of the listed functions exist: run "
                        "cmake/layout/record_hot_functions.py again")
    for failure in failures:
        print("FAILED " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
