"""Fixtures: each test gets its own jitcache directory and PoCL cache directory (tmp_path)."""
import pathlib

import pytest

KERNELS = pathlib.Path(__file__).resolve().parents[2] / "kernels"


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """JITCACHE_DIR and POCL_CACHE_DIR of this test, set in the environment (for default_cache()
    and child processes) and returned."""
    jitcache_dir = tmp_path / "jitcache"
    pocl_dir = tmp_path / "pocl"
    monkeypatch.setenv("JITCACHE_DIR", str(jitcache_dir))
    monkeypatch.setenv("POCL_CACHE_DIR", str(pocl_dir))
    monkeypatch.setenv("JITCACHE_OPENCL_STORE", "wait")  # stored when the cache is closed
    for name in ("JITCACHE_DISABLE", "JITCACHE_READONLY", "POCL_KERNEL_CACHE"):
        monkeypatch.delenv(name, raising=False)
    return {"jitcache": jitcache_dir, "pocl": pocl_dir}


@pytest.fixture
def cache(dirs):
    """A jitcache.Cache in this test's directory, closed afterwards."""
    import jitcache
    c = jitcache.Cache(dir=str(dirs["jitcache"]))
    yield c
    c.close()
