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


def _check(function, name, value, kind):
    """Raises a one-line TypeError naming `function`'s argument `name` unless `value` is of
    `kind`: "str", "strs" (a sequence of str, not one str) or "headers" ({str: str}).
    pybind11's own TypeError would list every argument given, the whole kernel source."""
    if kind == "str":
        ok = isinstance(value, str)
        wanted = "a str"
    elif kind == "strs":
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
        wanted = "a sequence of str (one element each)"
    else:
        ok = value is None or (isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()))
        wanted = "a dict of str to str"
    if not ok:
        raise TypeError(f"jitcache.cuda.{function}(): {name} must be {wanted}, "
                        f"not {type(value).__name__}")


def _call(function, bound, cache, *arguments):
    """Calls the extension's `bound` with the cache (default_cache() when None) and
    `arguments`, after _check; a TypeError the extension still raises is cut to one line."""
    if cache is not None and not isinstance(cache, _jitcache.Cache):
        raise TypeError(f"jitcache.cuda.{function}(): cache must be a jitcache.Cache, "
                        f"not {type(cache).__name__}")
    try:
        return bound(cache if cache is not None else default_cache(), *arguments)
    except TypeError as error:
        if "incompatible function arguments" not in str(error):
            raise
        raise TypeError(f"jitcache.cuda.{function}(): an argument is of the wrong type "
                        f"(see help(jitcache.cuda.{function}))") from None


def _listed(value):
    """`value` as a list when it is an iterable other than a str (for _check's "strs")."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return value
    return list(value)


def _check_program(function, source, options, name_expressions, name, headers):
    """The program's arguments checked (see _check); returns options and name_expressions as
    lists."""
    options, name_expressions = _listed(options), _listed(name_expressions)
    _check(function, "source", source, "str")
    _check(function, "options", options, "strs")
    _check(function, "name_expressions", name_expressions, "strs")
    _check(function, "name", name, "str")
    _check(function, "headers", headers, "headers")
    return options, name_expressions


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
    options, name_expressions = _check_program("load_module", source, options, name_expressions,
                                               name, headers)
    return _call("load_module", _jitcache.cuda_load_module, cache, source, options,
                 name_expressions, name, headers or {})


def compile(source, arch, options=(), name_expressions=(), name="program.cu", headers=None, *,
            cache=None):
    """Compiles (or finds) `source` for `arch` ("sm_80", "sm_90a") without a GPU or driver and
    stores it, so that a later load_module() of the same program on such a device is a hit.

    Returns a CudaBinary: .cubin (the ELF cubin, bytes), .target, .lowered_names, .info.
    Arguments and errors as load_module(); also jitcache.Error "unsupported" for an architecture
    the installed NVRTC cannot target.
    """
    options, name_expressions = _check_program("compile", source, options, name_expressions, name,
                                               headers)
    _check("compile", "arch", arch, "str")
    return _call("compile", _jitcache.cuda_compile, cache, source, arch, options,
                 name_expressions, name, headers or {})
