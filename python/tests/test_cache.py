"""jitcache.Cache: configuration over the environment, info, stats, bad arguments."""
import pytest

import jitcache


def test_dir_and_read_only_override_the_environment(dirs, tmp_path):
    with jitcache.Cache(dir=str(tmp_path / "mine"), read_only=True, max_size="1G") as cache:
        info = cache.info()
        assert info["cache_dir"] == str(tmp_path / "mine" / "v1")
        assert info["read_only"] is True
        assert info["max_size"] == 1 << 30
        assert info["version"] == jitcache.version
        assert set(info["persistent"]) == {"opencl", "cuda", "hip"}


def test_defaults_come_from_the_environment(dirs):
    with jitcache.Cache() as cache:
        assert cache.info()["cache_dir"] == str(dirs["jitcache"] / "v1")
        assert cache.info()["variables"]["JITCACHE_DIR"] == str(dirs["jitcache"])
        assert cache.stats() == {}


def test_bad_arguments(dirs):
    with pytest.raises(jitcache.ArgumentError, match="JITCACHE_MAX_SIZE=banana"):
        jitcache.Cache(max_size="banana")
    with pytest.raises(TypeError):
        jitcache.Cache(max_size=True)
    with pytest.raises(TypeError):
        jitcache.Cache(dir=42)
    with pytest.raises(TypeError):
        jitcache.Cache("positional")
    with pytest.raises(jitcache.ArgumentError):
        jitcache.Cache(dir="")


def test_error_carries_code_message_and_log():
    e = jitcache.Error("clBuildProgram failed", "compile_failed", "line 1: error")
    assert (e.code, e.message, e.log) == ("compile_failed", "clBuildProgram failed",
                                          "line 1: error")
    assert str(e) == "clBuildProgram failed\nline 1: error"
