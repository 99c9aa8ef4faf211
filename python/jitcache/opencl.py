"""OpenCL through PyOpenCL: build() in place of pyopencl.Program(ctx, src).build().

    import pyopencl as cl
    import jitcache.opencl
    program = jitcache.opencl.build(ctx, ctx.devices[0], source, "-I kernels")
    program.saxpy(queue, ...)          # a pyopencl.Program, as PyOpenCL's own build returns
    program.info                       # jitcache.BuildInfo: outcome, tier, timings, bytes, key
"""

import pyopencl as _cl

from jitcache import _jitcache, default_cache

if not _jitcache.has_opencl:
    raise ImportError("jitcache was built without its OpenCL backend")

__all__ = ["build", "tuning_device"]

_Program = _cl.Program
_ProgramHandle = _cl._cl._Program
# Whether pyopencl.Program's one-argument constructor leaves exactly the attributes that
# _program_of sets itself; learnt from the first program made through the public from_int_ptr.
_known_layout = None


def _program_of(handle, ctx):
    """A pyopencl.Program taking over one reference to `handle`, a program of `ctx`.

    Program.from_int_ptr asks OpenCL for the program's context and wraps it anew: on a
    memory-tier hit that is most of the Python call's cost, and the context is known here. So once
    the installed PyOpenCL has shown that its Program holds nothing else, the same object is made
    directly; any other PyOpenCL keeps the public path.
    """
    global _known_layout
    if _known_layout:
        program = _Program.__new__(_Program)
        program._prg = _ProgramHandle.from_int_ptr(handle, False)
        program._context = ctx
        program._build_duration_info = None
        return program
    program = _Program.from_int_ptr(handle, retain=False)
    if _known_layout is None:
        _known_layout = (set(vars(program)) == {"_prg", "_context", "_build_duration_info"}
                         and program._context == ctx)
    return program


def build(ctx, device, source, options="", *, cache=None):
    """Returns a pyopencl.Program built from `source` with `options` (one string, as
    clBuildProgram takes it) for `device` of `ctx`, through the cache.

    The program is a plain pyopencl.Program (kernels by attribute, all_kernels(), ...) with one
    attribute added: `info`, a jitcache.BuildInfo (outcome "hit"/"miss", tier, compile_ms,
    load_ms, total_ms, bytes, key). PyOpenCL's Program is a Python class that takes new
    attributes, so no subclass or wrapper is needed.

    The key covers the device and the OpenCL platform's versions, `options` exactly as given,
    `source` and every header it includes through the -I paths in `options`.

    Raises TypeError when ctx is not a pyopencl.Context, device not a pyopencl.Device, or source
    or options not a str; jitcache.ArgumentError (a ValueError) for an empty source;
    jitcache.Error with code "compile_failed" and the build log in .log when the source does
    not compile; ValueError when `cache` is closed. The GIL is released while building.
    """
    if not isinstance(ctx, _cl.Context):
        raise TypeError(f"ctx must be a pyopencl.Context, not {type(ctx).__name__}")
    if not isinstance(device, _cl.Device):
        raise TypeError(f"device must be a pyopencl.Device, not {type(device).__name__}")
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, not {type(source).__name__}")
    if not isinstance(options, str):
        raise TypeError(f"options must be a str, not {type(options).__name__}")
    handle, info = _jitcache.opencl_build(cache if cache is not None else default_cache(),
                                          ctx.int_ptr, device.int_ptr, source, options)
    program = _program_of(handle, ctx)
    program.info = info
    return program


def tuning_device(device):
    """`device` (a pyopencl.Device) as the tuning database knows it: a jitcache.tuning.Device
    (backend "opencl", its name, and the device and toolchain fields of its kernel key)."""
    if not isinstance(device, _cl.Device):
        raise TypeError(f"device must be a pyopencl.Device, not {type(device).__name__}")
    from jitcache.tuning import Device
    backend, name, identity = _jitcache.opencl_tuning_device(device.int_ptr)
    return Device(backend, name, [tuple(field) for field in identity])
