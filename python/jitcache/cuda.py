"""CUDA through NVRTC: load_module() into the current context, compile() offline.

With CuPy (its context is current once CuPy has touched the device):

    m = jitcache.cuda.load_module(source, name_expressions=["scale<float, 4>"])
    f = cupy.cuda.driver.moduleGetFunction(m.handle, m.lowered_names["scale<float, 4>"])

With cuda-python: cuda.cuModuleGetFunction(cuda.CUmodule(m.handle), name). Or m.function(name)
gives the CUfunction as an int.
"""

from jitcache import _jitcache, default_cache

if not _jitcache.has_cuda:
    raise ImportError("jitcache was built without its CUDA backend")

__all__ = ["load_module", "compile"]


def load_module(source, options=(), name_expressions=(), name="program.cu", headers=None, *,
                cache=None):
    """Returns a CudaModule loaded into the current CUDA context: .handle (the CUmodule as an
    int), .lowered_names ({name expression: lowered name}), .info (jitcache.BuildInfo) and
    .function(name) (a CUfunction as an int). The module stays loaded while the returned object
    or the cache lives; never unload it.

    options: NVRTC options, one per element (not -arch: the device's architecture is used);
    name_expressions: C++ names to instantiate ("scale<float, 4>"); name: NVRTC's program name
    (its directory resolves #include "x"); headers: {name: content} given in memory.

    Raises TypeError for arguments of the wrong type (options as one str included);
    jitcache.ArgumentError for an empty source, an -arch option or no current context;
    jitcache.Error ("compile_failed" with NVRTC's log in .log, "runtime_missing" without a
    driver, ...); ValueError when `cache` is closed. The GIL is released while compiling.
    """
    return _jitcache.cuda_load_module(cache if cache is not None else default_cache(), source,
                                      options, name_expressions, name, headers or {})


def compile(source, arch, options=(), name_expressions=(), name="program.cu", headers=None, *,
            cache=None):
    """Compiles (or finds) `source` for `arch` ("sm_80", "sm_90a") without a GPU or driver and
    stores it, so that a later load_module() of the same program on such a device is a hit.

    Returns a CudaBinary: .cubin (the ELF cubin, bytes), .target, .lowered_names, .info.
    Arguments and errors as load_module(); also jitcache.Error "unsupported" for an architecture
    the installed NVRTC cannot target.
    """
    return _jitcache.cuda_compile(cache if cache is not None else default_cache(), source, arch,
                                  options, name_expressions, name, headers or {})
