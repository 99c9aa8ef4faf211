#!/usr/bin/env python3
"""Writes hot_functions.txt: the functions of jitcache's libraries, modules and tool that fresh
processes run when every request is a hit, which the build places together in each of them
(cmake/JitcacheCodeLayout.cmake).

Each scenario runs once to fill a user tier of its own, then again under Valgrind's callgrind
(--demangle=no); every function that run executed in one of BUILD's is listed, by its mangled
name, scenario after scenario (sorted within each), each name once, after a first line naming
the compiler (the names are that compiler's: another inlines and clones differently). Scenarios whose programs
BUILD lacks are skipped and named. Run it again after changes to the hit path: the layout test
(tests/layout) fails when too many names no longer exist, or when the NVRTC front-end's hit
runs functions the list does not name.

  python3 cmake/layout/record_hot_functions.py --build build [--build CI_BUILD] \
      --cuda-include CUDA/include

CI compiles in batches of files (CMake's unity build), which inlines differently and names its
static constructors by batch: give a build made as ci/build.sh makes it as a second --build.

code_layout.current records that one scenario (--only) and compares.

Needs valgrind, PoCL and NVRTC (hipRTC when built); no GPU.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))


def scenarios(build, cuda_include):
    """(name, argv, extra environment) of each fresh process whose hits are recorded."""
    kernels = os.path.join(SOURCE, "kernels")
    headers = ["-I", f"{cuda_include}/cccl", "-I", cuda_include]
    rtc = [("nvrtc", "scale.cu", ["-arch=sm_90", "-I", kernels, "scale<float, 4>"]),
           ("nvrtc", "transpose.cu", ["-arch=sm_90", *headers]),
           ("hiprtc", "saxpy.hip", ["--offload-arch=gfx90a"])]
    out = []
    for runtime, kernel, arguments in rtc:
        out.append((f"{runtime} front-end, {kernel}",
                    [os.path.join(build, f"bench/rtc/rtc_bench_{runtime}"),
                     os.path.join(kernels, kernel), *arguments],
                    {"LD_PRELOAD": os.path.join(build, f"interposers/libjitcache-{runtime}.so")}))
    out.append(("OpenCL layer", [os.path.join(build, "tests/interposers/opencl_layer/jitcache_opencl_layer_probe")],
                {"OPENCL_LAYERS": os.path.join(build, "interposers/opencl_layer/libjitcache-opencl-layer.so")}))
    cli = [os.path.join(build, "tools/jitcache/jitcache"), "build", "--backend"]
    for backend, kernel, arguments in (("cuda", "saxpy.cu", ["--arch", "sm_90"]),
                                       ("cuda", "transpose.cu", ["--arch", "sm_90", "--options", " ".join(headers)]),
                                       ("opencl", "vector_ops.cl", ["--wait", "--options", f"-I {kernels}"])):
        out.append((f"C++ API ({backend}), {kernel}",
                    [*cli, backend, *arguments, os.path.join(kernels, kernel)], {}))
    python = ("import sys, jitcache.cuda; "
              "jitcache.cuda.compile(open(sys.argv[1]).read(), 'sm_90', ['-I', sys.argv[2]])")
    out.append(("Python module (cuda), saxpy.cu",
                [sys.executable, "-c", python, os.path.join(kernels, "saxpy.cu"), kernels],
                {"PYTHONPATH": os.path.join(build, "python")}))
    return out


def is_ours(path, build):
    """Whether `path` is one of BUILD's libraries, modules or its command line tool."""
    name = os.path.basename(path)
    return path.startswith(build) and (name.startswith(("libjitcache", "_jitcache")) or
                                       name == "jitcache")


def executed_functions(profile, build):
    """The mangled names of the functions of BUILD's libraries and tool that a callgrind profile
    ran."""
    objects, functions, names = {}, {}, []
    current = None
    pattern = re.compile(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$")
    for line in open(profile, encoding="utf-8", errors="replace"):
        match = pattern.match(line.rstrip("\n"))
        if not match:
            continue
        kind, number, name = match.groups()
        table = objects if kind.endswith("ob") else functions
        if name:
            table[number] = name
        if kind == "ob":
            current = objects[number]
        elif kind == "fn":
            if is_ours(current or "", build):
                names.append(re.sub(r"'\d+$", "", functions[number]))
    return [n for n in names if not n.startswith("0x")]


def valgrind_library_path(env):
    """LD_LIBRARY_PATH as a program run under valgrind sees it with `env`: Debian's valgrind
    script adds a folder to it, and the user tier remembers a runtime's identity per library
    path, so the run that fills the tier must see the same (else the recorded run is no warm
    process: it opens the runtime to read its identity again)."""
    seen = subprocess.run(["valgrind", "-q", "--tool=none", "/usr/bin/env"], env=env, check=True,
                          stdout=subprocess.PIPE, text=True).stdout
    for line in seen.splitlines():
        if line.startswith("LD_LIBRARY_PATH="):
            return line[len("LD_LIBRARY_PATH="):]
    return None


def recorded_run(argv, extra, build, work):
    """The functions of `build` that `argv` ran under callgrind, after a first run that filled a
    user tier of its own (both in `work`)."""
    here = os.path.join(work, "cwd")
    os.makedirs(here)
    env = dict(os.environ, JITCACHE_DIR=os.path.join(work, "tier"),
               POCL_CACHE_DIR=os.path.join(work, "pocl"), **extra)
    filling = dict(env)
    library_path = valgrind_library_path(env)
    if library_path is not None:
        filling["LD_LIBRARY_PATH"] = library_path
    subprocess.run(argv, env=filling, cwd=here, check=True, stdout=subprocess.DEVNULL)
    profile = os.path.join(work, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no",
                    f"--callgrind-out-file={profile}", *argv], env=env, cwd=here, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return executed_functions(profile, build)


def compiler_of(build):
    """The C++ compiler `build` was configured with, as "ID VERSION" (CMake's names)."""
    found = {}
    for name in os.listdir(os.path.join(build, "CMakeFiles")):
        path = os.path.join(build, "CMakeFiles", name, "CMakeCXXCompiler.cmake")
        if os.path.exists(path):
            for key, value in re.findall(r'set\(CMAKE_CXX_COMPILER_(ID|VERSION) "([^"]*)"\)',
                                         open(path).read()):
                found[key] = value
    return f"{found.get('ID', '?')} {found.get('VERSION', '?')}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, action="append",
                        help="a build folder of this source; again for another (CI's unity build)")
    parser.add_argument("--cuda-include", required=True, help="the CUDA toolkit's include folder")
    parser.add_argument("--out", default=os.path.join(HERE, "hot_functions.txt"))
    parser.add_argument("--only", default="", help="run the scenarios whose name holds this")
    args = parser.parse_args()
    builds = [os.path.realpath(b) for b in args.build]
    compilers = {compiler_of(build) for build in builds}
    if len(compilers) != 1:
        sys.exit(f"the builds were made by different compilers: {sorted(compilers)}")
    # Scenario by scenario, its runs in every build: plans[b][n] is scenario n in build b.
    plans = [scenarios(build, args.cuda_include) for build in builds]
    listed, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for number, runs in enumerate(zip(*plans)):
            found = set()
            for index, (build, (name, argv, extra)) in enumerate(zip(builds, runs)):
                if args.only not in name:
                    break
                if not all(os.path.exists(p) for p in [argv[0], *extra.values()]):
                    print(f"skipped ({name}, {build}): not built", file=sys.stderr)
                    continue
                found.update(recorded_run(argv, extra, build, os.path.join(tmp, f"{number}.{index}")))
            new = sorted(found - seen)  # callgrind's order varies from run to run
            seen.update(new)
            listed += new
            if found:
                print(f"{name}: {len(found)} functions, {len(new)} new", file=sys.stderr)
    with open(args.out, "w") as out:
        out.write(f"# compiler: {compilers.pop()}\n" + "\n".join(listed) + "\n")
    print(f"{args.out}: {len(listed)} functions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
