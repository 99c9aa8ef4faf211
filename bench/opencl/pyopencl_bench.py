"""PyOpenCL's own binary cache on the same sources and options, for bench/opencl/compare.py;
with --jitcache, the same program built through jitcache.opencl.build instead (JITCACHE_DIR), for
bench/python/bench_pyopencl.py.

usage: pyopencl_bench.py FILE CACHE_DIR [--jitcache]
Prints one JSON line: build_ms (the build returned) and first_launch_ms (the first launch of
every kernel has finished), both measured after context creation, like bench_opencl.
"""
import json
import os
import sys
import time

import numpy as np
import pyopencl as cl


def main():
    path, cache_dir = sys.argv[1], sys.argv[2]
    through_jitcache = sys.argv[3:] == ["--jitcache"]
    if through_jitcache:
        import jitcache.opencl
    kernels_dir = os.path.dirname(path)
    name = os.path.basename(path)
    table = json.load(open(os.path.join(kernels_dir, "..", "bench", "opencl", "kernels.json")))
    source = open(path).read()
    platform = cl.get_platforms()[0]
    device = platform.get_devices()[0]
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)

    t0 = time.perf_counter()
    if through_jitcache:
        program = jitcache.opencl.build(ctx, device, source, "-I " + kernels_dir)
    else:
        program = cl.Program(ctx, source).build(options=["-I", kernels_dir], cache_dir=cache_dir)
    build_ms = (time.perf_counter() - t0) * 1e3
    mf = cl.mem_flags
    init = np.full(4 * 65536, 0.5, dtype=np.float32)
    for kernel_name, spec in table[name].items():
        kernel = getattr(program, kernel_name)
        args = []
        for arg in spec["args"]:
            if arg == "b":
                args.append(cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=init))
            elif arg.startswith("n:"):
                args.append(np.int32(int(arg[2:])))
            else:
                args.append(np.float32(float(arg[2:])))
        local = (spec["local"],) if "local" in spec else None
        kernel(queue, (spec["global"],), local, *args)
    queue.finish()
    first_launch_ms = (time.perf_counter() - t0) * 1e3
    result = {"mode": "jitcache" if through_jitcache else "pyopencl", "file": name,
              "build_ms": build_ms, "first_launch_ms": first_launch_ms}
    if through_jitcache:
        result["outcome"] = program.info.outcome
    print(json.dumps(result))


if __name__ == "__main__":
    main()
