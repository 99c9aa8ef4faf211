"""PyOpenCL's side of bench/opencl/first_run.py: builds every FILE with "-I DIR" (its own cache
off with PYOPENCL_NO_CACHE=1, PoCL's on), launches nothing, prints one JSON line with cpu_s
(getrusage of this process).

usage: pyopencl_first_run.py DIR FILE...
"""
import json
import resource
import sys

import pyopencl as cl


def main():
    work, files = sys.argv[1], sys.argv[2:]
    ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    for path in files:
        with open(path) as f:
            cl.Program(ctx, f.read()).build(options=["-I", work])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cpu_s": usage.ru_utime + usage.ru_stime}))


if __name__ == "__main__":
    main()
