#!/usr/bin/env python3
"""One CuPy RawModule measurement in this fresh process, printed as one JSON line.

usage: bench_cupy.py KERNEL.cu FUNCTION [--expression] [-- OPTION...]

Times RawModule(code, options) + get_function, with the CUDA context created and NVRTC loaded
before the clock starts. CUPY_CACHE_DIR (set by compare.py) holds CuPy's disk cache: the first
run in an empty one compiles, later runs are disk-cache hits.
"""
import json
import sys
import time

import cupy


def main():
    args = sys.argv[1:]
    options = []
    if "--" in args:
        at = args.index("--")
        args, options = args[:at], args[at + 1:]
    path, function = args[0], args[1]
    expression = "--expression" in args[2:]
    with open(path) as f:
        source = f.read()
    device = cupy.cuda.Device(0)
    device.use()
    cupy.cuda.runtime.deviceSynchronize()  # the context exists before the clock starts
    cupy.cuda.nvrtc.getVersion()
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    start = time.perf_counter()
    module = cupy.RawModule(code=source, options=tuple(options),
                            name_expressions=(function,) if expression else None)
    module.get_function(function)
    ms = (time.perf_counter() - start) * 1e3
    print(json.dumps({"mode": "cupy", "device": name, "ms": ms}))


if __name__ == "__main__":
    main()
