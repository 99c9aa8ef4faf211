# Finds the Python interpreter and headers, then pybind11, for the Python module (python/), when
# JITCACHE_PYTHON is on; what is missing fails configure, naming it. Sets JITCACHE_PYTHON_INSTALL_DIR
# (relative to the install prefix) and JITCACHE_PYTHON_TO_BIN (from there to the CLI's folder).
#
# The module's tests need PyOpenCL, NumPy and pytest from the distribution's packages, which are
# installed for the distribution's interpreter: prefer it over another python3 earlier in PATH
# (pyenv, conda), unless Python3_EXECUTABLE is given.
if(NOT JITCACHE_PYTHON)
  return()
endif()
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
if(Python3_FOUND)
  # Found after Python3, pybind11 uses that interpreter (its FindPython mode).
  find_package(pybind11 2.6 CONFIG QUIET)
endif()
if(NOT Python3_FOUND OR NOT pybind11_FOUND)
  if(NOT Python3_FOUND)
    set(_missing "Python 3's interpreter and headers (Debian: python3-dev)")
  else()
    set(_missing "pybind11 >= 2.6 (Debian: pybind11-dev)")
  endif()
  message(FATAL_ERROR "The Python module (JITCACHE_PYTHON=ON) needs ${_missing}, not found. "
                      "Install it, or configure with -DJITCACHE_PYTHON=OFF to build without the "
                      "Python module.")
endif()

# Where this interpreter imports packages from for the install prefix: Debian's python3 reads
# /usr/lib/python3/dist-packages (its deb_system scheme) and /usr/local/lib/python3.X/dist-packages
# (posix_local), not the upstream lib/python3.X/site-packages; other prefixes get the upstream
# layout (a PYTHONPATH entry).
execute_process(
  COMMAND "${Python3_EXECUTABLE}" -c [=[
import os, sys, sysconfig
prefix = os.path.normpath(sys.argv[1])
schemes = sysconfig.get_scheme_names()
scheme, base = "posix_prefix", prefix
if prefix == "/usr" and "deb_system" in schemes:
    scheme = "deb_system"
elif prefix == "/usr/local" and "posix_local" in schemes:
    scheme, base = "posix_local", "/usr"
path = sysconfig.get_path("platlib", scheme, vars={"base": base, "platbase": base})
print(os.path.relpath(path, prefix), end="")
]=] "${CMAKE_INSTALL_PREFIX}"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _python_dir ERROR_VARIABLE _error)
if(NOT _rc EQUAL 0 OR _python_dir STREQUAL "")
  message(FATAL_ERROR "Cannot ask ${Python3_EXECUTABLE} where packages go: ${_error}")
endif()
set(JITCACHE_PYTHON_DIR "" CACHE STRING
    "Where the Python package is installed, relative to the install prefix; empty = where the interpreter imports from for that prefix")
if(JITCACHE_PYTHON_DIR)
  set(JITCACHE_PYTHON_INSTALL_DIR "${JITCACHE_PYTHON_DIR}")
else()
  set(JITCACHE_PYTHON_INSTALL_DIR "${_python_dir}")
endif()
file(RELATIVE_PATH JITCACHE_PYTHON_TO_BIN
     "${CMAKE_INSTALL_PREFIX}/${JITCACHE_PYTHON_INSTALL_DIR}/jitcache" "${CMAKE_INSTALL_FULL_BINDIR}")
