"""jitcache.mpi.build_programs under mpirun: each kernel compiled once for the job (PoCL)."""
import os
import shutil
import tempfile

import numpy as np
import pyopencl as cl
import pytest
from mpi4py import MPI

import jitcache
import jitcache.mpi

COMM = MPI.COMM_WORLD


def kernel(n):
    return ("__kernel void k(__global int* x) { size_t i = get_global_id(0); "
            f"x[i] = x[i] * 3 + {n}; }}\n")


@pytest.fixture(scope="module")
def device():
    for platform in cl.get_platforms():
        if "Portable Computing Language" in platform.name:
            return platform.get_devices()[0]
    pytest.fail("PoCL is not installed (pocl-opencl-icd)")


@pytest.fixture
def shared_dir():
    """A folder all ranks share, made by rank 0; and a PoCL cache of this rank's own."""
    path = COMM.bcast(tempfile.mkdtemp(prefix="jitcache-mpi-py-") if COMM.rank == 0 else None)
    own = tempfile.mkdtemp(prefix="jitcache-mpi-py-pocl-")
    os.environ["POCL_CACHE_DIR"] = own
    yield path
    COMM.Barrier()
    shutil.rmtree(own, ignore_errors=True)
    if COMM.rank == 0:
        shutil.rmtree(path, ignore_errors=True)


def test_each_kernel_is_compiled_once_for_the_job_and_every_rank_runs_it(device, shared_dir):
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    wanted = [COMM.rank % 2, 2]
    report = {}
    with jitcache.Cache(dir=os.path.join(shared_dir, "user")) as cache:
        programs = jitcache.mpi.build_programs(COMM, ctx, device,
                                               [(kernel(n), "") for n in wanted],
                                               cache=cache, report=report)
        compiles = cache.stats().get("opencl", {}).get("compiles", 0)
    assert report["agreed"]
    assert COMM.allreduce(compiles) == (3 if COMM.size > 1 else 2)
    assert COMM.allreduce(report["compiled"]) == (3 if COMM.size > 1 else 2)
    for n, program in zip(wanted, programs):
        x = np.arange(8, dtype=np.int32)
        buffer = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
        program.k(queue, x.shape, None, buffer)
        cl.enqueue_copy(queue, x, buffer)
        assert list(x) == [i * 3 + n for i in range(8)]


def test_a_compile_error_is_every_asking_ranks_error(device, shared_dir):
    ctx = cl.Context([device])
    with jitcache.Cache(dir=os.path.join(shared_dir, "user")) as cache:
        with pytest.raises(jitcache.Error) as raised:
            jitcache.mpi.build_programs(COMM, ctx, device, [("__kernel void broken( {", "")],
                                        cache=cache)
        errors = cache.stats().get("opencl", {}).get("compile_errors", 0)
    assert raised.value.code == "compile_failed"
    assert COMM.allreduce(errors) == 1
