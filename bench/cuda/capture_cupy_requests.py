#!/usr/bin/env python3
"""Runs CuPy's workload of bench/cuda/rtc_front_end_gpu.py (CuPy's in-memory cache only, so that
every kernel is compiled) and writes every NVRTC program CuPy compiled (source, name, headers
given in memory, options, and how long its compile took) to OUT/cupy_requests.json, and the
folders its include options name to OUT/cupy_includes.tar.xz: what bench_front_end_miss (bench/rtc) replays on a machine without a
GPU or CuPy, to measure the NVRTC front-end's own cost on CuPy's real requests.

usage (on a machine with CuPy): capture_cupy_requests.py OUT
then: mkdir DIR && tar -xJf OUT/cupy_includes.tar.xz -C DIR
      build/bench/rtc/bench_front_end_miss OUT/cupy_requests.json --prefix DIR
"""
import json
import os
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtc_front_end_gpu import CUPY_WORKLOAD  # noqa: E402


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    os.environ["CUPY_CACHE_IN_MEMORY"] = "1"
    from cupy_backends.cuda.libs import nvrtc
    programs, requests = {}, []
    create, compile_program = nvrtc.createProgram, nvrtc.compileProgram

    def create_traced(src, name, headers=(), include_names=()):
        program = create(src, name, headers, include_names)
        programs[program] = {"source": src, "name": name, "headers": list(headers),
                             "include_names": list(include_names)}
        return program

    def compile_traced(program, options=()):
        request = dict(programs.get(program, {}))
        request["options"] = [o.decode() if isinstance(o, bytes) else o for o in options]
        requests.append(request)
        start = time.perf_counter()
        try:
            return compile_program(program, options)
        finally:
            request["compile_ms"] = (time.perf_counter() - start) * 1000

    nvrtc.createProgram, nvrtc.compileProgram = create_traced, compile_traced
    exec(CUPY_WORKLOAD, {"__name__": "workload"})  # noqa: S102 (the benchmark's own code)
    with open(os.path.join(out, "cupy_requests.json"), "w") as f:
        json.dump(requests, f)
    folders = set()
    for request in requests:
        options = request["options"]
        for i, option in enumerate(options):
            if option == "-I" and i + 1 < len(options):
                folders.add(options[i + 1])
            elif option.startswith("-I") and len(option) > 2:
                folders.add(option[2:])
            elif option.startswith("--include-path="):
                folders.add(option.split("=", 1)[1])
    with tarfile.open(os.path.join(out, "cupy_includes.tar.xz"), "w:xz") as tar:
        for folder in sorted(folders):
            if os.path.isdir(folder):
                tar.add(folder)
    print(f"{len(requests)} requests, {len(folders)} include folders: {out}")


if __name__ == "__main__":
    main()
