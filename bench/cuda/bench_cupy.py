#!/usr/bin/env python3
"""One peer's cache-hit measurement in this fresh process, printed as one JSON line: CuPy's
RawModule disk cache, or cuda.core's program cache.

usage: bench_cupy.py [--peer cupy|cuda.core] KERNEL.cu FUNCTION [--expression] [--launch SPEC]
                     [--symbol NAME] [--headers FILE] [--cache DIR] [-- OPTION...]

cupy: times RawModule(code, options) + get_function, with the CUDA context created and NVRTC
loaded before the clock starts. CUPY_CACHE_DIR (set by compare.py) holds CuPy's disk cache: the
first run in an empty one compiles, later runs are disk-cache hits.

cuda.core: times what its documentation asks of a caller whose options pull in header files
(include_path): the headers' digest (FILE lists them, one path a line, as bench_cuda headers
prints) passed as make_program_cache_key's extra_digest, the lookup in a FileStreamProgramCache
at DIR, ObjectCode.from_cubin and get_kernel (by NAME, the lowered symbol of a name expression:
the cached bytes carry no symbol mapping); on a miss, the compile and the store.

With --launch SPEC (as bench_cuda's: f a float, i the int 256, k the int 32, p a device buffer made before the
clock), the clock stops after one launch (one block of 256 threads) has completed.
"""
import hashlib
import json
import sys
import time


def parse(argv):
    options = []
    if "--" in argv:
        at = argv.index("--")
        argv, options = argv[:at], argv[at + 1:]
    named = {"--peer": "cupy", "--launch": None, "--symbol": None, "--headers": None,
             "--cache": None}
    rest = []
    i = 0
    while i < len(argv):
        if argv[i] in named and i + 1 < len(argv):
            named[argv[i]] = argv[i + 1]
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    return named, rest, options


def kernel_args(spec, buffer):
    """A launch's arguments from `spec` (f: float 1.0, i: int 256, k: int 32, p: `buffer()`, a
    1 MiB device buffer); none for no spec."""
    import numpy
    args = []
    for c in spec or "":
        if c == "f":
            args.append(numpy.float32(1.0))
        elif c in "ik":
            args.append(numpy.int32(256 if c == "i" else 32))
        elif c == "p":
            args.append(buffer())
    return args


def cupy_hit(source, function, expression, spec, options):
    import cupy
    device = cupy.cuda.Device(0)
    device.use()
    cupy.cuda.runtime.deviceSynchronize()  # the context exists before the clock starts
    cupy.cuda.nvrtc.getVersion()
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    args = kernel_args(spec, lambda: cupy.zeros(1 << 18, dtype=cupy.float32))
    cupy.cuda.runtime.deviceSynchronize()
    start = time.perf_counter()
    module = cupy.RawModule(code=source, options=tuple(options),
                            name_expressions=(function,) if expression else None)
    kernel = module.get_function(function)
    if spec is not None:
        kernel((1,), (256,), tuple(args))
        cupy.cuda.runtime.deviceSynchronize()
    return name, (time.perf_counter() - start) * 1e3


def cuda_core_hit(source, function, expression, spec, options, symbol, headers, cache_dir):
    from cuda.core import Device, LaunchConfig, ObjectCode, Program, ProgramOptions, launch
    from cuda.core.utils import FileStreamProgramCache, make_program_cache_key
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    stream.sync()  # the context exists before the clock starts
    include = [o[2:] for o in options if o.startswith("-I")]
    program_options = ProgramOptions(arch=f"sm_{device.arch}", include_path=include)
    with open(headers) as f:
        header_files = f.read().split()
    args = kernel_args(spec, lambda: device.allocate(1 << 20, stream=stream))
    stream.sync()
    start = time.perf_counter()
    digest = hashlib.sha256()
    for path in header_files:
        with open(path, "rb") as f:
            digest.update(path.encode() + b"\0" + f.read())
    names = (function,) if expression else ()
    key = make_program_cache_key(code=source, code_type="c++", options=program_options,
                                 target_type="cubin", name_expressions=names,
                                 extra_digest=digest.digest())
    with FileStreamProgramCache(cache_dir) as cache:
        data = cache.get(key)
        if data is None:
            code = Program(source, "c++", options=program_options).compile(
                "cubin", name_expressions=names)
            cache[key] = code
        else:
            code = ObjectCode.from_cubin(data)
    kernel = code.get_kernel(symbol or function)
    if spec is not None:
        launch(stream, LaunchConfig(grid=1, block=256), kernel, *args)
        stream.sync()
    return device.name, (time.perf_counter() - start) * 1e3


def main():
    named, rest, options = parse(sys.argv[1:])
    path, function = rest[0], rest[1]
    expression = "--expression" in rest[2:]
    with open(path) as f:
        source = f.read()
    if named["--peer"] == "cuda.core":
        name, ms = cuda_core_hit(source, function, expression, named["--launch"], options,
                                 named["--symbol"], named["--headers"], named["--cache"])
    else:
        name, ms = cupy_hit(source, function, expression, named["--launch"], options)
    print(json.dumps({"mode": named["--peer"], "device": name, "ms": ms}))


if __name__ == "__main__":
    main()
