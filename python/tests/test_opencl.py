"""jitcache.opencl.build on PoCL through PyOpenCL."""
import json
import os
import subprocess
import sys

import numpy as np
import pyopencl as cl
import pytest

import jitcache
import jitcache.opencl
from conftest import KERNELS

SAXPY = """
__kernel void saxpy(__global const float* x, __global float* y, const float a) {
  int i = get_global_id(0);
  y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def device():
    for platform in cl.get_platforms():
        if "Portable Computing Language" in platform.name:
            return platform.get_devices()[0]
    pytest.fail("PoCL is not installed (pocl-opencl-icd)")


@pytest.fixture
def ctx(device, dirs):
    # After dirs: PoCL reads POCL_CACHE_DIR when a context is first made in a process.
    return cl.Context([device])


def test_miss_then_memory_hit_returns_a_pyopencl_program(cache, ctx, device):
    first = jitcache.opencl.build(ctx, device, SAXPY, cache=cache)
    assert isinstance(first, cl.Program)
    assert first.info.outcome == "miss"
    assert first.info.tier == "compile"
    assert first.info.compile_ms > 0
    assert len(first.info.key) == 64
    second = jitcache.opencl.build(ctx, device, SAXPY, cache=cache)
    assert second.info.outcome == "hit"
    assert second.info.tier == "memory"
    assert second.info.key == first.info.key
    assert second.get_info(cl.program_info.CONTEXT) == ctx
    assert second.int_ptr == first.int_ptr  # the memory tier's program, retained once more
    assert {k.function_name for k in second.all_kernels()} == {"saxpy"}
    stats = cache.stats()["opencl"]
    assert stats["misses"] == 1
    assert stats["compiles"] == 1
    assert stats["hits"] == 1


def test_kernel_computes_the_right_result(cache, ctx, device):
    jitcache.opencl.build(ctx, device, SAXPY, cache=cache)
    program = jitcache.opencl.build(ctx, device, SAXPY, cache=cache)  # the memory tier's
    queue = cl.CommandQueue(ctx)
    x = np.arange(1024, dtype=np.float32)
    y = np.ones(1024, dtype=np.float32)
    mf = cl.mem_flags
    x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=y)
    program.saxpy(queue, x.shape, None, x_buf, y_buf, np.float32(2))
    out = np.empty_like(y)
    cl.enqueue_copy(queue, out, y_buf)
    np.testing.assert_array_equal(out, 2 * x + 1)


CHILD = """
import json, sys
import pyopencl as cl
import jitcache.opencl
device = [p for p in cl.get_platforms() if "Portable" in p.name][0].get_devices()[0]
ctx = cl.Context([device])
source = open(sys.argv[1]).read()
program = jitcache.opencl.build(ctx, device, source, "-I " + sys.argv[2])
program.all_kernels()
i = program.info
print(json.dumps({"outcome": i.outcome, "tier": i.tier, "key": i.key, "bytes": i.bytes}))
"""


def run_child(dirs, pocl_dir):
    env = dict(os.environ, JITCACHE_DIR=str(dirs["jitcache"]), POCL_CACHE_DIR=str(pocl_dir))
    r = subprocess.run([sys.executable, "-c", CHILD, str(KERNELS / "reduce.cl"), str(KERNELS)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_new_process_hits_what_an_earlier_one_stored(dirs, tmp_path):
    # The first process stores through default_cache(), flushed at exit; the second has a fresh
    # PoCL cache, so only jitcache's user tier can answer it.
    first = run_child(dirs, tmp_path / "pocl-1")
    assert (first["outcome"], first["tier"]) == ("miss", "compile")
    second = run_child(dirs, tmp_path / "pocl-2")
    assert (second["outcome"], second["tier"]) == ("hit", "user")
    assert second["bytes"] > 0
    assert second["key"] == first["key"]


def test_compile_error_raises_jitcache_error_with_the_build_log(cache, ctx, device):
    with pytest.raises(jitcache.Error) as caught:
        jitcache.opencl.build(ctx, device, "__kernel void k() { undeclared_thing = 1; }",
                              cache=cache)
    assert caught.value.code == "compile_failed"
    assert "undeclared_thing" in caught.value.log
    assert "undeclared_thing" in str(caught.value)
    assert cache.stats()["opencl"]["compile_errors"] == 1


def test_header_found_through_the_include_option(cache, ctx, device):
    source = (KERNELS / "vector_ops.cl").read_text()
    program = jitcache.opencl.build(ctx, device, source, f"-I {KERNELS}", cache=cache)
    assert {k.function_name for k in program.all_kernels()} >= {"saxpy", "vector_add"}


@pytest.mark.parametrize("change, message", [
    ({"ctx": None}, "ctx must be a pyopencl.Context"),
    ({"device": "device 0"}, "device must be a pyopencl.Device"),
    ({"source": b"bytes"}, "source must be a str"),
    ({"options": ["-I", "x"]}, "options must be a str"),
])
def test_wrong_types_raise_type_error(cache, ctx, device, change, message):
    args = dict(ctx=ctx, device=device, source=SAXPY, options="")
    args.update(change)
    with pytest.raises(TypeError, match=message):
        jitcache.opencl.build(**args, cache=cache)


def test_empty_source_raises_argument_error(cache, ctx, device):
    with pytest.raises(jitcache.ArgumentError) as caught:
        jitcache.opencl.build(ctx, device, "", cache=cache)
    assert isinstance(caught.value, ValueError)
    assert caught.value.code == "invalid_argument"
    assert "empty" in caught.value.message


def test_a_closed_cache_raises_a_clear_error(dirs, ctx, device):
    with jitcache.Cache(dir=str(dirs["jitcache"])) as cache:
        jitcache.opencl.build(ctx, device, SAXPY, cache=cache)
    assert cache.closed
    with pytest.raises(ValueError, match="closed"):
        jitcache.opencl.build(ctx, device, SAXPY, cache=cache)
    with pytest.raises(ValueError, match="closed"):
        cache.stats()
    cache.close()  # a second close does nothing


def test_threads_building_the_same_program_compile_it_once(cache, ctx, device):
    # The GIL is released while building: the threads meet in the cache, which compiles once.
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        programs = list(pool.map(lambda _: jitcache.opencl.build(ctx, device, SAXPY, cache=cache),
                                 range(4)))
    assert len({p.info.key for p in programs}) == 1
    assert sorted(p.info.outcome for p in programs).count("miss") == 1
    assert cache.stats()["opencl"]["compiles"] == 1
