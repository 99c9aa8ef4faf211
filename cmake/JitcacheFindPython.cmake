# Finds the Python interpreter and headers, then pybind11, for the Python module (python/).
# Sets JITCACHE_PYTHON_FOUND.
#
# The module's tests need PyOpenCL, NumPy and pytest from the distribution's packages, which are
# installed for the distribution's interpreter: prefer it over another python3 earlier in PATH
# (pyenv, conda), unless Python3_EXECUTABLE is given.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
set(JITCACHE_PYTHON_FOUND OFF)
if(Python3_FOUND)
  # Found after Python3, pybind11 uses that interpreter (its FindPython mode).
  find_package(pybind11 2.6 CONFIG QUIET)
  if(pybind11_FOUND)
    set(JITCACHE_PYTHON_FOUND ON)
  endif()
endif()
