"""One process of bench/core/many_processes.py on PyOpenCL's own binary cache: builds the same
kernels as tests/stress/stress_worker.cpp (the template is repeated here) through
pyopencl.Program(...).build(cache_dir=...), runs each, checks it, and prints one JSON line per
kernel: {"kernel", "outcome": "hit"|"miss" (PyOpenCL's was_cached), "build_ms", "ok"}.

usage: pyopencl_worker.py KERNELS CACHE_DIR
"""
import json
import sys
import time

import numpy as np
import pyopencl as cl


def kernel_source(i):
    return ("__kernel void scale_shift(__global const float* in, __global float* out) {\n"
            "  const size_t j = get_global_id(0);\n"
            f"  out[j] = in[j] * {i + 2}.0f + {i}.0f;\n"
            "}\n")


def main():
    kernels, cache_dir = int(sys.argv[1]), sys.argv[2]
    ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    queue = cl.CommandQueue(ctx)
    data = np.arange(256, dtype=np.float32)
    mf = cl.mem_flags
    for i in range(kernels):
        start = time.perf_counter()
        program = cl.Program(ctx, kernel_source(i)).build(cache_dir=cache_dir)
        build_ms = (time.perf_counter() - start) * 1e3
        was_cached = program._build_duration_info[1]
        a = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=data)
        b = cl.Buffer(ctx, mf.WRITE_ONLY, data.nbytes)
        program.scale_shift(queue, data.shape, None, a, b)
        out = np.empty_like(data)
        cl.enqueue_copy(queue, out, b)
        ok = bool(np.array_equal(out, data * np.float32(i + 2) + np.float32(i)))
        print(json.dumps({"kernel": i, "outcome": "hit" if was_cached else "miss",
                          "build_ms": build_ms, "ok": ok}), flush=True)


if __name__ == "__main__":
    main()
