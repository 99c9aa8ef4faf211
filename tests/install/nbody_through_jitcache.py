"""Runs PyOpenCL's n-body.py example (python-pyopencl-doc) with its program built through
jitcache, and prints how that build was served: "jitcache: outcome=miss tier=compile".

The example is changed the way a user adopting the Python module changes a PyOpenCL program:
its one program build, `cl.Program(ctx, BlobOpenCL).build(options=...)` (two branches, by
platform), becomes `jitcache.opencl.build(ctx, XPU, BlobOpenCL, ...)`. Nothing else changes, and
no jitcache setting is made: the module's default cache serves it.

Usage: python3 nbody_through_jitcache.py N-BODY.PY [ITS ARGUMENTS...]
"""
import re
import sys

import jitcache.opencl

path = sys.argv[1]
with open(path, encoding="utf-8") as file:
    source = file.read()
source, builds = re.subn(r"cl\.Program\(ctx, BlobOpenCL\)\.build\(\s*options=",
                         "jitcache.opencl.build(ctx, XPU, BlobOpenCL, ", source)
if builds != 2:
    sys.exit(f"{path}: expected its two program builds, found {builds}: another version?")

sys.argv = sys.argv[1:]
scope = {"__name__": "__main__", "__file__": path, "jitcache": jitcache}
exec(compile(source, path, "exec"), scope)
info = scope["MyRoutines"].info
print(f"jitcache: outcome={info.outcome} tier={info.tier} ({info.total_ms:.0f} ms)")
