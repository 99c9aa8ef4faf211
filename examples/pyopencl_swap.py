#!/usr/bin/env python3
"""A PyOpenCL program whose kernels come from jitcache instead of PyOpenCL's own cache.

usage: PYTHONPATH=build/python python3 examples/pyopencl_swap.py
Run it twice: the first run compiles (info: miss), the second loads the stored binary (hit).

The swap is one line: where the program said
    program = cl.Program(ctx, SOURCE).build(options=OPTIONS)
it now says
    program = jitcache.opencl.build(ctx, device, SOURCE, " ".join(OPTIONS))
and gets the same pyopencl.Program, plus program.info (outcome, tier, timings).
"""
import numpy as np
import pyopencl as cl

import jitcache.opencl

SOURCE = """
__kernel void axpb(__global const float* x, __global float* y, const float a, const float b) {
  int i = get_global_id(0);
  y[i] = a * x[i] + b;
}
"""
OPTIONS = ["-cl-fast-relaxed-math"]


def main():
    device = cl.get_platforms()[0].get_devices()[0]
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)

    program = jitcache.opencl.build(ctx, device, SOURCE, " ".join(OPTIONS))

    x = np.linspace(0, 1, 1 << 16, dtype=np.float32)
    mf = cl.mem_flags
    x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(ctx, mf.WRITE_ONLY, x.nbytes)
    program.axpb(queue, x.shape, None, x_buf, y_buf, np.float32(2), np.float32(1))
    y = np.empty_like(x)
    cl.enqueue_copy(queue, y, y_buf)
    assert np.allclose(y, 2 * x + 1)
    i = program.info
    print(f"{i.outcome} from {i.tier}: {i.total_ms:.1f} ms (compile {i.compile_ms:.1f} ms, "
          f"load {i.load_ms:.1f} ms, {i.bytes} bytes); y[-1] = {y[-1]}")


if __name__ == "__main__":
    main()
