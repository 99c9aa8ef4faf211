"""The tuning database: which parameters (tile sizes, work per item, ...) a kernel should use for
a problem on a device, from the user tier's records, then the packages', then the family's
heuristic, then its declared default; and tuning that measures candidates and records the best.

    import jitcache.opencl, jitcache.tuning as tuning
    family = tuning.Family("matmul", ["TILE", "WPT"], {"TILE": "8", "WPT": "1"},
                           heuristic=lambda problem, device: None)
    device = jitcache.opencl.tuning_device(cl_device)
    def prepare(parameters, defines):            # build with `defines` ("-D TILE=16 -D WPT=2")
        program = jitcache.opencl.build(ctx, cl_device, source, defines)
        kernel = ...                               # bind the arguments
        def run():                                 # one run, to completion
            cl.enqueue_nd_range_kernel(queue, kernel, ...).wait()
        return run, lambda: c_host.tobytes()       # or just run
    choice = tuning.select(family, {"N": "256"}, device, candidates, prepare)
    choice.parameters, choice.origin               # {"TILE": "16", ...}, "user"

The mode comes from JITCACHE_TUNE unless given (select(mode=...)): "off" (never tunes),
"missing", "all", "retune", "clean", as in the C++ API (jitcache/tuning.hpp). The GIL is released
while jitcache works and taken for each callback; prepare, run and the output are called on the
calling thread. An exception raised by prepare or run skips that candidate; one raised by the
heuristic counts as no guess.
"""

from collections import namedtuple

from jitcache import _jitcache, default_cache

__all__ = ["Choice", "Device", "Family", "lookup", "select", "tune"]

# A device as the tuning database knows it: backend ("opencl"), name (for people), identity (a
# list of (field, value): what a record must match). jitcache.opencl.tuning_device() makes one.
Device = namedtuple("Device", ["backend", "name", "identity"])

# Where the parameters came from: origin is "user", "embedded", "system", "heuristic" or
# "declared"; record is the record's dict (family, problem, device, parameters, best_ms,
# default_ms, method, when, jitcache_version, candidates, skipped) for user, embedded and system.
Choice = namedtuple("Choice", ["parameters", "origin", "record"])


class Family:
    """A tunable kernel: its name, the parameters' names (in the order defines are written), the
    declared default (a value for each), an optional heuristic(problem, device) returning a
    parameters dict or None, and a version to bump when the kernel changes (records of another
    version no longer apply). Parameter values and problem values are str."""

    def __init__(self, name, parameters, defaults, *, heuristic=None, version=1):
        if not isinstance(name, str) or not name:
            raise TypeError("name must be a non-empty str")
        self.name = name
        self.parameters = [str(p) for p in parameters]
        self.defaults = {str(k): str(v) for k, v in defaults.items()}
        missing = [p for p in self.parameters if p not in self.defaults]
        if missing:
            raise ValueError(f"defaults has no value for {', '.join(missing)}")
        if heuristic is not None and not callable(heuristic):
            raise TypeError("heuristic must be callable or None")
        self.heuristic = heuristic
        self.version = int(version)

    def _spec(self):
        heuristic = self.heuristic
        if heuristic is not None:
            def guess(problem, device, _h=heuristic):
                return _h(problem, Device(*device))
            heuristic = guess
        return (self.name, self.version, self.parameters, self.defaults, heuristic)


def _device(device):
    if not isinstance(device, Device):
        raise TypeError(f"device must be a jitcache.tuning.Device, not {type(device).__name__}")
    return (device.backend, device.name, [tuple(field) for field in device.identity])


def _problem(problem):
    return {str(k): str(v) for k, v in problem.items()}


def _choice(answer):
    return Choice(*answer)


def lookup(family, problem, device, *, cache=None):
    """The parameters to use for `problem` (a dict) on `device`, without tuning: the user tier's
    record, then the packages', then the heuristic, then the declared default. Never fails."""
    return _choice(_jitcache.tuning_lookup(cache if cache is not None else default_cache(),
                                           family._spec(), _problem(problem), _device(device)))


def _tune(family, problem, device, candidates, prepare, check, warmup, repeats, time_limit,
          wait, mode, select, cache):
    if not callable(prepare):
        raise TypeError("prepare must be callable")
    if check is not None and not callable(check):
        raise TypeError("check must be callable or None")
    return _choice(_jitcache.tuning_tune(
        cache if cache is not None else default_cache(), family._spec(), _problem(problem),
        _device(device), [_problem(c) for c in candidates], prepare, check, int(warmup),
        int(repeats), float(time_limit), bool(wait), mode, select))


def tune(family, problem, device, candidates, prepare, *, check=None, warmup=1, repeats=5,
         time_limit=60.0, wait=True, cache=None):
    """Tunes `problem` now, whatever JITCACHE_TUNE says: the declared default first, then each
    candidate (a parameters dict): prepare(parameters, defines) builds it and returns run, or
    (run, output) with output() -> bytes; warm-up runs, then the median of `repeats`; then the
    fastest and the default again side by side. Candidates that raise, or whose output `check`
    (reference_bytes, output_bytes) -> bool refuses (byte equality without check), are skipped.
    Records the choice in the user tier and returns it (origin "user"). Raises jitcache.Error
    when the default itself cannot be prepared or run."""
    return _tune(family, problem, device, candidates, prepare, check, warmup, repeats,
                 time_limit, wait, None, False, cache)


def select(family, problem, device, candidates, prepare, *, mode=None, check=None, warmup=1,
           repeats=5, time_limit=60.0, wait=True, cache=None):
    """What an application calls when it meets a problem: applies `mode` (JITCACHE_TUNE unless
    given): "off" looks up; "missing" tunes what no record has, once; "all" what the user tier
    has not; "retune" tunes again once per process; "clean" drops the user tier's record. A
    failed tuning falls back to lookup() with one warning. Never raises for the tuning itself;
    jitcache.ArgumentError for an unknown mode."""
    return _tune(family, problem, device, candidates, prepare, check, warmup, repeats,
                 time_limit, wait, mode, True, cache)
