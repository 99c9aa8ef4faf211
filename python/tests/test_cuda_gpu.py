"""jitcache.cuda.load_module on a real GPU, used from CuPy's raw driver calls (skipped without
CuPy or a GPU)."""
import ctypes
import os
import subprocess
import sys

import pytest

import jitcache

cuda = pytest.importorskip("jitcache.cuda", reason="jitcache built without its CUDA backend")
cupy = pytest.importorskip("cupy", reason="CuPy is not installed")

SCALE = """
template <typename T, int N>
__global__ void scale(T* x) { x[threadIdx.x] *= N; }
"""
EXPRESSION = "scale<float, 4>"


@pytest.fixture(scope="module")
def gpu():
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA driver or device")
    cupy.cuda.Device(0).use()
    cupy.zeros(1)  # CuPy's context is current from here on


def launch(function, x):
    pointer = ctypes.c_void_p(x.data.ptr)
    params = (ctypes.c_void_p * 1)(ctypes.addressof(pointer))
    cupy.cuda.driver.launchKernel(function, 1, 1, 1, x.size, 1, 1, 0, 0,
                                  ctypes.addressof(params), 0)
    cupy.cuda.runtime.deviceSynchronize()


def test_module_runs_from_cupy_and_hits_in_memory(gpu, cache):
    module = cuda.load_module(SCALE, name_expressions=[EXPRESSION], cache=cache)
    assert module.info.outcome == "miss"
    assert isinstance(module.handle, int) and module.handle != 0
    function = cupy.cuda.driver.moduleGetFunction(module.handle,
                                                  module.lowered_names[EXPRESSION])
    assert function == module.function(EXPRESSION)
    x = cupy.arange(32, dtype=cupy.float32)
    launch(function, x)
    assert cupy.asnumpy(x).tolist() == [4.0 * i for i in range(32)]
    again = cuda.load_module(SCALE, name_expressions=[EXPRESSION], cache=cache)
    assert (again.info.outcome, again.info.tier) == ("hit", "memory")
    assert again.handle == module.handle


CHILD = """
import json, sys
import cupy
import jitcache.cuda
cupy.zeros(1)
m = jitcache.cuda.load_module(sys.argv[1], name_expressions=[sys.argv[2]])
x = cupy.ones(8, dtype=cupy.float32)
f = m.function(sys.argv[2])
print(json.dumps({"outcome": m.info.outcome, "tier": m.info.tier, "f": f != 0}))
"""


def test_a_new_process_hits_from_the_user_tier(gpu, dirs):
    import json
    outcomes = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", CHILD, SCALE, EXPRESSION], env=dict(os.environ),
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outcomes.append(json.loads(r.stdout))
    assert (outcomes[0]["outcome"], outcomes[1]["outcome"]) == ("miss", "hit")
    assert outcomes[1]["tier"] == "user"
