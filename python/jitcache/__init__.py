"""jitcache: a cache of JIT-compiled GPU kernels (OpenCL, CUDA) for Python.

    import jitcache.opencl
    program = jitcache.opencl.build(ctx, device, source, "-I kernels")   # a pyopencl.Program
    program.info.outcome                                                  # "hit" or "miss"

Submodules: jitcache.opencl (needs PyOpenCL), jitcache.cuda (CuPy, cuda-python, or offline),
jitcache.tuning (the tuning database).
Calls without cache= use default_cache(), configured from the environment (JITCACHE_DIR, ...).
"""

import atexit
import threading

from jitcache._errors import ArgumentError, Error
from jitcache._jitcache import BuildInfo, Cache, version

__all__ = ["ArgumentError", "BuildInfo", "Cache", "Error", "default_cache", "version"]
__version__ = version

_default = None
_default_lock = threading.Lock()


def default_cache():
    """The process's Cache from the environment, created on first use and closed at exit."""
    global _default
    cache = _default
    if cache is None:
        with _default_lock:
            if _default is None:
                _default = Cache()
                # Misses are stored in the background: finish them before the interpreter goes.
                atexit.register(_default.close)
            cache = _default
    return cache


def __getattr__(name):
    # Submodules load on first use: jitcache.opencl imports PyOpenCL, which a CUDA program
    # need not have.
    if name in ("opencl", "cuda", "tuning"):
        import importlib
        return importlib.import_module("jitcache." + name)
    raise AttributeError(f"module 'jitcache' has no attribute {name!r}")
