"""A PyOpenCL program for bench/opencl/layer_bench.py: ElementwiseKernel, ReductionKernel and
pyopencl.array operations, as PyOpenCL's users write them, each building its programs from
generated source. Prints one JSON line: ms, the time from after the context's creation until
every operation has run once (its programs built and launched).

usage: layer_workload.py [--record FILE | --floor FILE | --no-binary-cache]
  --record FILE: also writes every program's binary (by source and options) to FILE, read
                 after the launches (over PoCL's cache, as jitcache's store reads them);
  --floor FILE:  builds every program from the binary FILE has for it (the floor: kernels loaded
                 from binaries handed to the program, nothing looked up but a dictionary).
Both replace PyOpenCL's cached build, which PyOpenCL skips under PYOPENCL_NO_CACHE: run them
without it. Either exits with an error if no program went through it.
  --no-binary-cache: PyOpenCL's cached build given cache_dir=False for every program (what a
                 context's cache_dir attribute does, which does not reach the programs PyOpenCL
                 makes through queue.context, a new wrapper): every program is built from source
                 (through the layer, when it is there), while PyOpenCL keeps the cache of the
                 Python code it generates to launch each kernel, which PYOPENCL_NO_CACHE turns
                 off too.
"""
import json
import pickle
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.cache
from pyopencl.elementwise import ElementwiseKernel
from pyopencl.reduction import ReductionKernel


def hand_binaries(mode, path):
    """Replaces PyOpenCL's cached build by one that records each binary, or builds from one."""
    original = pyopencl.cache.create_built_program_from_source_cached
    if mode == "--floor":
        with open(path, "rb") as f:
            binaries = pickle.load(f)

        def from_binary(ctx, src, options_bytes, devices=None, cache_dir=None,
                        include_path=None):
            devices = devices or ctx.devices
            program = cl._cl._Program(ctx, devices, [binaries[(src, options_bytes)]])
            program.build(options_bytes, devices)
            handed.append(src)
            return program, True

        handed = []
        pyopencl.cache.create_built_program_from_source_cached = from_binary
        return handed
    recorded = {}

    def recording(ctx, src, options_bytes, devices=None, cache_dir=None, include_path=None):
        program, built = original(ctx, src, options_bytes, devices, False, include_path)
        recorded[(src, options_bytes)] = (ctx, devices)
        return program, built

    pyopencl.cache.create_built_program_from_source_cached = recording
    return recorded


def main():
    recorded = None
    if len(sys.argv) == 3:
        recorded = hand_binaries(sys.argv[1], sys.argv[2])
    if sys.argv[1:] == ["--no-binary-cache"]:
        original = pyopencl.cache.create_built_program_from_source_cached
        pyopencl.cache.create_built_program_from_source_cached = (
            lambda ctx, src, options_bytes, devices=None, cache_dir=None, include_path=None:
            original(ctx, src, options_bytes, devices, False, include_path))
    context = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(context)
    t0 = time.perf_counter()
    n = 4096
    a = cl_array.to_device(queue, np.arange(n, dtype=np.float32))
    b = cl_array.to_device(queue, np.linspace(-1, 1, n).astype(np.float32))
    lin_comb = ElementwiseKernel(context, "float k, float *a, float *b, float *c",
                                 "c[i] = k * a[i] + b[i]", "lin_comb")
    c = cl_array.empty_like(a)
    lin_comb(np.float32(2.5), a, b, c)
    dot = ReductionKernel(context, np.float32, neutral="0", reduce_expr="a+b",
                          map_expr="x[i]*y[i]", arguments="__global float *x, __global float *y")
    dot(a, b).get()
    cl_array.sum(a).get()
    cl_array.max(b).get()
    ((a * 3 + b) / 2 - a).get()
    cl_array.dot(a, b).get()
    cl_array.if_positive(b, a, b).get()
    queue.finish()
    ms = (time.perf_counter() - t0) * 1e3
    if recorded is not None and not recorded:
        sys.exit(f"layer_workload.py: no program went through {sys.argv[1]} "
                 "(is PYOPENCL_NO_CACHE set?)")
    if isinstance(recorded, dict):
        # Read after the launches, from a program built again over PoCL's warm cache, whose
        # program folder then holds the kernels PoCL specialised for them (as jitcache's store).
        binaries = {}
        for (src, options_bytes), (ctx, devices) in recorded.items():
            program = cl._cl._Program(ctx, src)
            program.build(options_bytes, devices)
            binaries[(src, options_bytes)] = program.get_info(cl.program_info.BINARIES)[0]
        with open(sys.argv[2], "wb") as f:
            pickle.dump(binaries, f)
    print(json.dumps({"ms": ms}))


main()
