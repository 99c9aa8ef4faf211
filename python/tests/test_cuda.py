"""jitcache.cuda: offline compile with NVRTC (no GPU needed); load_module's errors."""
import os
import subprocess
import sys

import pytest

import jitcache

cuda = pytest.importorskip("jitcache.cuda", reason="jitcache built without its CUDA backend")

SCALE = """
template <typename T, int N>
__global__ void scale(T* x) { x[threadIdx.x] *= N; }
"""


def test_compile_returns_an_elf_cubin_and_the_lowered_names(cache):
    binary = cuda.compile(SCALE, "sm_80", options=["-DUNUSED=1"],
                          name_expressions=["scale<float, 4>"], name="scale.cu", cache=cache)
    assert binary.cubin[:4] == b"\x7fELF"
    assert binary.target == "sm_80"
    assert binary.info.outcome == "miss"
    assert binary.lowered_names["scale<float, 4>"].startswith("_Z")
    again = cuda.compile(SCALE, "sm_80", options=["-DUNUSED=1"],
                         name_expressions=["scale<float, 4>"], name="scale.cu", cache=cache)
    assert again.info.outcome == "hit"
    assert again.cubin == binary.cubin


def test_in_memory_headers(cache):
    source = '#include "n.h"\nextern "C" __global__ void k(int* x) { x[0] = N; }\n'
    binary = cuda.compile(source, "sm_80", headers={"n.h": "#define N 7\n"}, cache=cache)
    assert binary.cubin[:4] == b"\x7fELF"


def test_compile_error_raises_with_nvrtc_log(cache):
    with pytest.raises(jitcache.Error) as caught:
        cuda.compile('extern "C" __global__ void k() { undeclared_thing = 1; }', "sm_80",
                     cache=cache)
    assert caught.value.code == "compile_failed"
    assert "undeclared_thing" in caught.value.log


def test_bad_input(cache):
    with pytest.raises(TypeError):
        cuda.compile(SCALE, "sm_80", options="-DN=1", cache=cache)  # one option per element
    with pytest.raises(TypeError):
        cuda.compile(SCALE, 80, cache=cache)
    with pytest.raises(jitcache.ArgumentError):
        cuda.compile("", "sm_80", cache=cache)
    with pytest.raises(jitcache.ArgumentError):
        cuda.compile(SCALE, "banana", cache=cache)


@pytest.mark.parametrize("call, names", [
    (lambda cache: cuda.compile(SCALE, 80, cache=cache), "arch"),
    (lambda cache: cuda.compile(SCALE, "sm_80", options="-DN=1", cache=cache), "options"),
    (lambda cache: cuda.compile(SCALE, "sm_80", name_expressions=[1], cache=cache),
     "name_expressions"),
    (lambda cache: cuda.compile(SCALE, "sm_80", headers={"n.h": 7}, cache=cache), "headers"),
    (lambda cache: cuda.compile(SCALE, "sm_80", cache="mine"), "cache"),
    (lambda cache: cuda.load_module(SCALE, options=[3], cache=cache), "options"),
    (lambda cache: cuda.load_module(SCALE.encode(), cache=cache), "source"),
])
def test_a_wrong_argument_type_is_one_short_line(cache, call, names):
    # pybind11's own TypeError lists every argument given: the whole kernel source.
    with pytest.raises(TypeError) as caught:
        call(cache)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 200, message
    assert names in message
    assert "__global__" not in message and "threadIdx" not in message


def test_load_module_without_a_context_raises_jitcache_error(tmp_path):
    # In a new process, where nothing has made a CUDA context current (another test may have, in
    # this one): no driver (runtime_missing) or no current context (invalid_argument).
    script = (
        "import jitcache, jitcache.cuda as cuda\n"
        "try:\n"
        "    cuda.load_module('extern \"C\" __global__ void k() {}',"
        " cache=jitcache.Cache(dir=%r))\n"
        "    print('loaded')\n"
        "except jitcache.Error as e:\n"
        "    print(e.code)\n" % str(tmp_path / "cache")
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=os.environ.copy()).stdout.strip()
    assert out in ("runtime_missing", "invalid_argument", "no_device"), out


def _compile_in_a_fork(go, results):
    """A multiprocessing worker: waits for `go`, then compiles SCALE with a Cache of its own."""
    go.wait(60)
    with jitcache.Cache() as own:
        binary = cuda.compile(SCALE, "sm_80", name_expressions=["scale<float, 4>"], cache=own)
        results.put((binary.info.outcome, binary.info.tier))


def test_workers_forked_before_the_parent_closes_its_cache_hit_its_user_tier(dirs):
    # multiprocessing's fork: the workers share the parent's descriptor of the user tier's gate.
    # The parent's close, alone with the tier, holds the gate exclusively to mark a clean end;
    # it used to let go by closing its descriptor only, which left the gate held by the workers:
    # each worker's own open then waited 30 s for it and went on without the user tier.
    import multiprocessing
    context = multiprocessing.get_context("fork")
    go = context.Event()
    results = context.Queue()
    cache = jitcache.Cache()
    first = cuda.compile(SCALE, "sm_80", name_expressions=["scale<float, 4>"], cache=cache)
    assert first.info.outcome == "miss"
    workers = [context.Process(target=_compile_in_a_fork, args=(go, results)) for _ in range(4)]
    for worker in workers:
        worker.start()
    try:
        cache.close()
        assert (dirs["jitcache"] / "v1" / "closed").exists()  # the close held the gate alone
        go.set()
        outcomes = [results.get(timeout=20) for _ in workers]
        for worker in workers:
            worker.join(20)
            assert worker.exitcode == 0
        assert outcomes == [("hit", "user")] * len(workers)
    finally:
        for worker in workers:
            worker.kill()
            worker.join()
