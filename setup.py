"""Builds the jitcache Python package with CMake, for `pip install .` (see pyproject.toml).

The extension (jitcache._jitcache) and the jitcache tool come from the project's CMake build,
configured for this interpreter and installed (components python and cli) into a staging folder;
the tool goes inside the package, jitcache/bin/jitcache, where the extension's store handover
looks first (JITCACHE_PYTHON_TO_BIN is "bin"), and the `jitcache` command runs it. A wheel is then
whole wherever pip puts it: a virtual environment, --user, or a prefix.

CMAKE_ARGS (as scikit-build's) adds configure arguments, e.g. a compiler launcher;
CMAKE_BUILD_PARALLEL_LEVEL the build's jobs (default: every CPU).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# Where the staged package lies below the staging prefix (any relative folder would do).
STAGED_PACKAGE = "python/jitcache"
# Read-only kernel packages: the folder the Debian packages ship and their tool reads, so that a
# module installed with pip serves the same packages (JITCACHE_SYSTEM_PATH overrides it).
SYSTEM_PACKAGES = "/usr/share/jitcache/packages"


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(jitcache VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        temp = Path(self.build_temp).resolve()
        build, stage = temp / "cmake", temp / "stage"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DJITCACHE_PYTHON=ON", "-DJITCACHE_BUILD_TESTS=OFF", "-DJITCACHE_BUILD_BENCH=OFF",
            f"-DCMAKE_INSTALL_PREFIX={stage}",
            f"-DJITCACHE_PYTHON_DIR={Path(STAGED_PACKAGE).parent}",
            f"-DCMAKE_INSTALL_BINDIR={STAGED_PACKAGE}/bin",
            f"-DJITCACHE_DEFAULT_SYSTEM_PATH={SYSTEM_PACKAGES}",
        ] + shlex.split(os.environ.get("CMAKE_ARGS", ""))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        self._run(configure, "configure")
        self._run(["cmake", "--build", str(build), "--parallel", jobs,
                   "--target", "jitcache_python", "jitcache_cli"], "build")
        shutil.rmtree(stage, ignore_errors=True)
        for component in ("python", "cli"):
            self._run(["cmake", "--install", str(build), "--component", component,
                       "--prefix", str(stage)], "install")

        staged = stage / STAGED_PACKAGE
        extensions = list(staged.glob("_jitcache*.so"))
        if len(extensions) != 1:
            sys.exit(f"jitcache: expected one extension in {staged}, found {extensions}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(extensions[0], target)
        (target.parent / "bin").mkdir(exist_ok=True)
        shutil.copy2(staged / "bin" / "jitcache", target.parent / "bin" / "jitcache")

    @staticmethod
    def _run(command, step):
        print("jitcache:", shlex.join(command), flush=True)
        if subprocess.run(command).returncode != 0:
            # CMake's own message (say, "needs pybind11 >= 2.6 (Debian: pybind11-dev)") is above;
            # the last line of pip's report says where to look.
            sys.exit(f"jitcache: CMake's {step} step failed; its message is above")


setup(
    version=project_version(),
    packages=["jitcache"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("jitcache._jitcache")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-python"}},
    zip_safe=False,
)
