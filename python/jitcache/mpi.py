"""One compile per kernel for a whole MPI job, through mpi4py (no server, no shared filesystem).

    from mpi4py import MPI
    import pyopencl as cl
    import jitcache.mpi
    programs = jitcache.mpi.build_programs(MPI.COMM_WORLD, ctx, ctx.devices[0],
                                           [(source_a, ""), (source_b, "-DN=4")])

Every rank of the communicator calls it with its own requests; each kernel that no rank's tiers
hold is compiled once for the job by one of the ranks that asked for it (spread across them),
and its binary sent to the others that asked. The exchange is written here with mpi4py (the
extension links no MPI): each wait is a loop of nonblocking tests with a deadline, so a rank
that stalls or never joins delays the others by `timeout` seconds at most, after which they
compile what they lack themselves. A rank that dies makes Open MPI abort the job, unless the
job runs under `mpirun --enable-recovery`: then the others compile what it owed once `timeout`
passed (an MPI error met on the way is taken as the call's end, never raised).
"""

import time as _time

import numpy as _np
from mpi4py import MPI as _MPI

from jitcache import _errors, _jitcache, default_cache
from jitcache import opencl as _opencl

__all__ = ["build_programs"]

_TAG = 7301


def _pause_after(waited):
    """The pause before the next test of a call that has waited `waited` seconds: a sixteenth
    of it, within [50 us, 10 ms] (as the C++ exchange: a collective of oversubscribed ranks
    is answered within about 6%, and ranks that wait through a compile wake 100 times a second,
    leaving the cores to the ranks compiling)."""
    return min(max(waited / 16, 0.00005), 0.01)


def _wait(request, left):
    """Tests `request` until it completes or fails (True: a rank died, in a job run with
    mpirun --enable-recovery) or `left` seconds pass (False)."""
    start = _time.monotonic()
    end = start + max(left, 0.0)
    while True:
        try:
            if request.Test():
                return True
        except _MPI.Exception:
            return True
        now = _time.monotonic()
        if now >= end:
            return False
        _time.sleep(_pause_after(now - start))


class _Exchange:
    """The cohort's exchange (jitcache/cohort.hpp) over an mpi4py communicator: a duplicate of
    it per call (Idup), so nothing an abandoned call left is taken for the next one's. What a
    call gave up on (a rank never came) is kept, never freed, as MPI may still write into it."""

    _kept = []

    def __init__(self, comm):
        self._comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._round = None
        self._sends = []

    def begin(self, left):
        self.end(0.0)
        dup, request = self._comm.Idup()
        if not _wait(request, left):
            self._kept.append((dup, request))
            return False
        self._round = dup
        return True

    def allgather(self, mine, left):
        end = _time.monotonic() + left
        own = _np.array([len(mine)], dtype=_np.uint64)
        sizes = _np.zeros(self.size, dtype=_np.uint64)
        request = self._round.Iallgather(own, sizes)
        if not _wait(request, end - _time.monotonic()):
            self._kept.append((own, sizes, request))
            return None
        counts = [int(n) for n in sizes]
        offsets = [sum(counts[:i]) for i in range(self.size)]
        source = bytearray(mine)
        gathered = bytearray(sum(counts))
        request = self._round.Iallgatherv(source, [gathered, counts, offsets, _MPI.BYTE])
        if not _wait(request, end - _time.monotonic()):
            self._kept.append((source, gathered, request))
            return None
        return [bytes(gathered[offsets[i]:offsets[i] + counts[i]]) for i in range(self.size)]

    def send(self, to, data):
        buffer = bytearray(data)
        self._sends.append((buffer, self._round.Isend(buffer, dest=to, tag=_TAG)))

    def receive(self, source, left):
        start = _time.monotonic()
        end = start + left
        status = _MPI.Status()
        while True:
            try:
                message = self._round.Improbe(source=source, tag=_TAG, status=status)
            except _MPI.Exception:
                return None  # its provider died: compiled here
            if message is not None:
                break
            now = _time.monotonic()
            if now >= end:
                return None
            _time.sleep(_pause_after(now - start))
        buffer = bytearray(status.Get_count(_MPI.BYTE))
        request = message.Irecv(buffer)
        if not _wait(request, end - _time.monotonic()):
            self._kept.append((buffer, request))
            return None
        return bytes(buffer)

    def end(self, left):
        end = _time.monotonic() + left
        done = all([_wait(request, end - _time.monotonic()) for _, request in self._sends])
        if self._round is not None:
            if done:
                self._round.Free()
            else:  # a receiver gave up: its sends stay pending, and the duplicate with them
                self._kept.append((self._round, self._sends))
        self._round = None
        self._sends = []


def build_programs(comm, ctx, device, requests, *, cache=None, timeout=600.0, report=None):
    """jitcache.opencl.build() for each (source, options) of `requests`, together with the other
    ranks of `comm` (an mpi4py communicator; collective: every rank calls it, each with its own
    requests). Returns one pyopencl.Program per request, in order, each with `.info`.

    `timeout` (seconds): how long a rank waits for the others to join and agree, and for each
    binary owed to it; then it compiles what it lacks itself. `report` (a dict, optional)
    receives what this rank did: requests, distinct (keys of the job), compiled, shared,
    received, alone, agreed.

    Raises jitcache.Error for the first request that failed (compile_failed with the log, as
    the rank that compiled it met it); the programs of the others are released first.
    """
    for source, options in requests:
        if not isinstance(source, str) or not isinstance(options, str):
            raise TypeError("each request must be a (source, options) pair of str")
    results, summary = _jitcache.opencl_build_cohort(
        cache if cache is not None else default_cache(), _Exchange(comm), ctx.int_ptr,
        device.int_ptr, list(requests), float(timeout))
    if report is not None:
        report.update(summary)
    programs, failure = [], None
    for handle, info, error in results:
        if error is not None:
            code, message, log = error
            kind = _errors.ArgumentError if code == "invalid_argument" else _errors.Error
            failure = failure or kind(message, code, log)
            continue
        program = _opencl._program_of(handle, ctx)
        program.info = info
        programs.append(program)
    if failure is not None:
        del programs
        raise failure
    return programs
