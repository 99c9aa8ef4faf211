"""jitcache.tuning: the lookup order, tune() and select()'s modes with Python callbacks, and the
example's tiled matrix multiply (kernels/matmul_tuned.cl) tuned on PoCL through PyOpenCL."""
import numpy as np
import pyopencl as cl
import pytest

import jitcache
import jitcache.opencl
import jitcache.tuning as tuning
from conftest import KERNELS

DEVICE = tuning.Device("opencl", "test device", [("device_name", "test"), ("driver", "1")])


def family(heuristic=None):
    return tuning.Family("sum", ["TILE"], {"TILE": "8"}, heuristic=heuristic)


class Host:
    """Host trials: TILE=32 is the fastest; "bad" fails to prepare; 16 computes a wrong answer;
    counts what was prepared."""

    def __init__(self):
        self.prepared = []

    def prepare(self, parameters, defines):
        self.prepared.append(parameters["TILE"])
        assert defines.startswith("-D TILE=")
        if parameters["TILE"] == "bad":
            raise RuntimeError("undeclared identifier 'bad'")
        tile = int(parameters["TILE"])
        state = {}

        def run():
            import time
            time.sleep(0.0005 * (1 + abs(tile - 32) / 8))
            state["out"] = b"wrong" if tile == 16 else b"sum=2016"
        return run, lambda: state["out"]


CANDIDATES = [{"TILE": "16"}, {"TILE": "32"}, {"TILE": "bad"}, {"TILE": "64"}]


def test_lookup_then_tune_then_the_record_answers(cache):
    assert tuning.lookup(family(), {"N": "64"}, DEVICE, cache=cache) == (
        {"TILE": "8"}, "declared", None)
    guess = tuning.lookup(family(lambda problem, device: {"TILE": "64"}), {"N": "64"}, DEVICE,
                          cache=cache)
    assert (guess.parameters, guess.origin) == ({"TILE": "64"}, "heuristic")

    host = Host()
    tuned = tuning.tune(family(), {"N": "64"}, DEVICE, CANDIDATES, host.prepare, repeats=3,
                        cache=cache)
    assert tuned.origin == "user"
    assert tuned.parameters == {"TILE": "32"}
    assert sorted(host.prepared) == sorted(["8", "16", "32", "bad", "64"])
    assert tuned.record["candidates"] == 3  # the default, 32 and 64
    assert tuned.record["skipped"] == 2     # "bad" (prepare raised) and 16 (wrong answer)
    assert tuned.record["method"] == "tuned"
    assert tuned.record["best_ms"] < tuned.record["default_ms"]

    # The record comes before the heuristic, and holds only for its problem and device.
    found = tuning.lookup(family(lambda problem, device: {"TILE": "64"}), {"N": "64"}, DEVICE,
                          cache=cache)
    assert (found.parameters, found.origin) == ({"TILE": "32"}, "user")
    other = DEVICE._replace(identity=[("device_name", "test"), ("driver", "2")])
    assert tuning.lookup(family(), {"N": "64"}, other, cache=cache).origin == "declared"


def test_select_applies_each_mode(cache):
    host = Host()
    off = tuning.select(family(), {"N": "8"}, DEVICE, CANDIDATES, host.prepare, mode="off",
                        cache=cache)
    assert (off.origin, host.prepared) == ("declared", [])
    first = tuning.select(family(), {"N": "8"}, DEVICE, CANDIDATES, host.prepare, mode="missing",
                          repeats=3, cache=cache)
    assert (first.parameters, first.origin) == ({"TILE": "32"}, "user")
    prepared = len(host.prepared)
    again = tuning.select(family(), {"N": "8"}, DEVICE, CANDIDATES, host.prepare,
                          mode="missing", cache=cache)
    assert again.origin == "user" and len(host.prepared) == prepared  # tuned once
    cleaned = tuning.select(family(), {"N": "8"}, DEVICE, CANDIDATES, host.prepare,
                            mode="clean", cache=cache)
    assert cleaned.origin == "declared"
    with pytest.raises(jitcache.ArgumentError, match="mode must be"):
        tuning.select(family(), {"N": "8"}, DEVICE, CANDIDATES, host.prepare, mode="often",
                      cache=cache)


def test_failures_in_callbacks_are_errors_or_skips_never_crashes(cache):
    def broken(parameters, defines):
        raise RuntimeError("no compiler today")
    with pytest.raises(jitcache.Error, match="no compiler today"):
        tuning.tune(family(), {"N": "2"}, DEVICE, CANDIDATES, broken, cache=cache)

    def bad_heuristic(problem, device):
        raise KeyError("M")
    assert tuning.lookup(family(bad_heuristic), {"N": "2"}, DEVICE, cache=cache).origin == \
        "declared"
    with pytest.raises(TypeError):
        tuning.lookup(family(), {"N": "2"}, ("opencl", "x", []), cache=cache)
    with pytest.raises(ValueError, match="no value for TILE"):
        tuning.Family("sum", ["TILE"], {})


def test_the_example_matmul_is_tuned_on_pocl(cache, dirs):
    device = None
    for platform in cl.get_platforms():
        if "Portable Computing Language" in platform.name:
            device = platform.get_devices()[0]
    assert device is not None, "PoCL is not installed (pocl-opencl-icd)"
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    source = (KERNELS / "matmul_tuned.cl").read_text()
    n = 32
    rng = np.random.default_rng(7)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    flags = cl.mem_flags
    a_buf = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
    b_buf = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=b)
    c_buf = cl.Buffer(ctx, flags.WRITE_ONLY, a.nbytes)

    def prepare(parameters, defines):
        program = jitcache.opencl.build(ctx, device, source, defines, cache=cache)
        tile, wpt = int(parameters["TILE"]), int(parameters["WPT"])
        kernel = program.matmul_tuned
        kernel.set_args(np.int32(n), np.int32(n), np.int32(n), a_buf, b_buf, c_buf)

        def run():
            cl.enqueue_nd_range_kernel(queue, kernel, (n // wpt, n), (tile // wpt, tile)).wait()

        def output():
            c = np.empty_like(a)
            cl.enqueue_copy(queue, c, c_buf).wait()
            return c.tobytes()
        return run, output

    def close(reference, output):
        return np.allclose(np.frombuffer(reference, np.float32),
                           np.frombuffer(output, np.float32), rtol=1e-4, atol=1e-5)

    matmul = tuning.Family("matmul_tuned", ["TILE", "WPT"], {"TILE": "8", "WPT": "1"})
    device_id = jitcache.opencl.tuning_device(device)
    assert device_id.backend == "opencl" and device_id.name
    candidates = [{"TILE": "16", "WPT": "4"}, {"TILE": "4", "WPT": "2"},
                  {"TILE": "8", "WPT": "w"}]  # "w" is no number: its build fails
    tuned = tuning.tune(matmul, {"M": n, "N": n, "K": n}, device_id, candidates, prepare,
                        check=close, repeats=3, cache=cache)
    assert tuned.origin == "user"
    assert tuned.record["candidates"] == 3
    assert tuned.record["skipped"] == 1
    # The choice computes the right product.
    run, output = prepare(tuned.parameters,
                          " ".join(f"-D {k}={v}" for k, v in tuned.parameters.items()))
    run()
    assert np.allclose(np.frombuffer(output(), np.float32).reshape(n, n), a @ b, rtol=1e-4,
                       atol=1e-4)
    assert tuning.lookup(matmul, {"M": n, "N": n, "K": n}, device_id, cache=cache).origin == \
        "user"
