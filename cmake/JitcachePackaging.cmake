# CPack: one Debian package per install component (`cpack -G DEB` in a build directory configured
# with -DCMAKE_INSTALL_PREFIX=/usr):
#   libjitcache0      libjitcache.so.0 (component lib; named after its soname, Debian's rule)
#   jitcache          the command-line tool (component cli)
#   libjitcache-dev   headers, the CMake package, jitcache.pc, the libjitcache.so link (dev)
#   python3-jitcache  the Python module (component python, when JITCACHE_PYTHON is on)
# Each ships the system package folder, <datadir>/jitcache/packages, that its code reads.
#
# The packages install into the prefix the build was configured for, never another: the library
# compiles in the package folder and the CLI's place, GNUInstallDirs picks the multiarch library
# folder and Python's folder follows the prefix. cpack refuses (cmake/JitcacheCPackCheck.cmake)
# a build for a prefix other than /usr, where such a package would not be Debian's.
#
# What Debian's policy asks of each package (lintian checks it: ci/lintian.sh) comes from
# cmake/deb/: /usr/share/doc/PACKAGE/copyright and changelog.gz, the tool's manual page, the
# Python package's maintainer scripts, and lintian's overrides, each with its reason.
set(CPACK_PACKAGE_NAME jitcache)
set(CPACK_PACKAGE_VENDOR "jitcache")
set(JITCACHE_DEB_MAINTAINER "jitcache maintainers <maintainers@jitcache.invalid>" CACHE STRING
    "The Maintainer of the Debian packages (name <address>)")
set(CPACK_PACKAGE_CONTACT "${JITCACHE_DEB_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_PROJECT_CONFIG_FILE "${PROJECT_BINARY_DIR}/JitcacheCPackCheck.cmake")
set(JITCACHE_CPACK_PREFIX "${CMAKE_INSTALL_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/JitcacheCPackCheck.cmake.in
               ${PROJECT_BINARY_DIR}/JitcacheCPackCheck.cmake @ONLY)
set(CPACK_COMPONENTS_ALL cli dev)
if(NOT JITCACHE_STATIC)
  list(APPEND CPACK_COMPONENTS_ALL lib)
endif()
if(JITCACHE_PYTHON)
  list(APPEND CPACK_COMPONENTS_ALL python)
endif()
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libjitcache0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_CLI_PACKAGE_NAME jitcache)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libjitcache-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-jitcache)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
# Descriptions: the synopsis, then the extended description (no CPACK_PACKAGE_DESCRIPTION_SUMMARY:
# CPack would put it before each as a synopsis of its own).
set(_about "jitcache keeps the binaries of GPU kernels that programs compile at run time\n"
    "(OpenCL, CUDA's NVRTC, HIP's hipRTC), so that the next process loads them in\n"
    "milliseconds instead of compiling again. A cache per user, read-only packages\n"
    "installed system-wide, and a shared remote tier.")
string(CONCAT _about ${_about})
set(CPACK_DEBIAN_LIB_DESCRIPTION
    "cache of JIT-compiled GPU kernels - shared library\n${_about}\n\n"
    "This package holds the shared library (C++ and C API).")
set(CPACK_DEBIAN_CLI_DESCRIPTION
    "cache of JIT-compiled GPU kernels - command-line tool\n${_about}\n\n"
    "This package holds the jitcache tool, which inspects, sizes, fills and exports\n"
    "the cache, and stores what programs hand over in the background.")
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "cache of JIT-compiled GPU kernels - development files\n${_about}\n\n"
    "This package holds the headers, the CMake package (find_package(jitcache)) and\n"
    "jitcache.pc for pkg-config.")
set(CPACK_DEBIAN_PYTHON_DESCRIPTION
    "cache of JIT-compiled GPU kernels - Python 3 module\n${_about}\n\n"
    "This package holds the Python 3 module (import jitcache), for PyOpenCL\n"
    "programs and CUDA through NVRTC.")
# A .deb's binaries are stripped. `cpack -G DEB -D CPACK_STRIP_FILES=OFF` puts their debug
# information into -dbgsym packages (.ddeb) instead (73 MB more, and twice cpack's time).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
# libjitcache0: a shlibs file, and ldconfig run by dpkg's trigger (cmake/deb/lib/triggers).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/cmake/deb/lib/triggers")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_LIB_PACKAGE_MULTIARCH same)
# python3-jitcache: byte-compiled at install and cleaned at removal, as dh_python3 does.
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/cmake/deb/python/postinst"
                                              "${PROJECT_SOURCE_DIR}/cmake/deb/python/prerm")
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# JITCACHE_GZIP: cmake/JitcacheInstall.cmake (without gzip, the changelog stays uncompressed).
configure_file(${PROJECT_SOURCE_DIR}/cmake/deb/changelog.in ${PROJECT_BINARY_DIR}/deb/changelog
               @ONLY)
set(_changelog ${PROJECT_BINARY_DIR}/deb/changelog)
if(JITCACHE_GZIP)
  execute_process(COMMAND ${JITCACHE_GZIP} -9nc ${_changelog} OUTPUT_FILE ${_changelog}.gz)
  set(_changelog ${_changelog}.gz)
endif()
# Only into the packages: EXCLUDE_FROM_ALL leaves them out of a plain `cmake --install`, and cpack
# installs each component by name.
foreach(component LIB CLI DEV PYTHON)
  string(TOLOWER ${component} _name)
  set(_package ${CPACK_DEBIAN_${component}_PACKAGE_NAME})
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/deb/copyright ${_changelog}
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_package} COMPONENT ${_name} EXCLUDE_FROM_ALL)
  if(EXISTS ${PROJECT_SOURCE_DIR}/cmake/deb/${_name}/lintian-overrides)
    install(FILES ${PROJECT_SOURCE_DIR}/cmake/deb/${_name}/lintian-overrides
            DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME ${_package}
            COMPONENT ${_name} EXCLUDE_FROM_ALL)
  endif()
endforeach()

# The binaries' library dependencies come from the binaries themselves; the CUDA and HIP
# runtimes are opened with dlopen at first use, so neither is a dependency.
find_program(JITCACHE_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(JITCACHE_DPKG_SHLIBDEPS)
  foreach(component LIB CLI PYTHON)
    set(CPACK_DEBIAN_${component}_PACKAGE_SHLIBDEPS ON)
  endforeach()
  set(_binary_depends "")
else()
  set(_binary_depends "libc6, libstdc++6, liblmdb0, libxxhash0, libssl3, libhiredis0.14")
  if(JITCACHE_HAVE_OPENCL)
    string(APPEND _binary_depends ", ocl-icd-libopencl1 | libopencl1")
  endif()
endif()
# The library and the Python module hand stores to the jitcache tool (and store in the process,
# with a warning, without it): recommended, not required.
set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "${_binary_depends}")
set(CPACK_DEBIAN_LIB_PACKAGE_RECOMMENDS "jitcache (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "${_binary_depends}")
# The extension is built for one Python ABI (its file name says which).
if(JITCACHE_PYTHON)
  set(_python_depends "python3 (>= ${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}~)")
  math(EXPR _python_next "${Python3_VERSION_MINOR} + 1")
  string(APPEND _python_depends ", python3 (<< ${Python3_VERSION_MAJOR}.${_python_next})")
  if(_binary_depends)
    string(PREPEND _python_depends "${_binary_depends}, ")
  endif()
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "${_python_depends}")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_RECOMMENDS "jitcache (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-pyopencl, python3-numpy")
endif()

# The dev package: the library and the tool of the same version (the CMake package's
# jitcache::cli names the tool's file), and what the headers that every program includes need.
# A backend's own header needs its SDK (<CL/cl.h>, <cuda.h>, <hip/hip_runtime_api.h>), which the
# CMake package looks for only when that backend is asked for: suggested, not required, so
# installing the -dev package does not pull in a GPU vendor's development stack. (The CUDA
# toolkit's cuda.h does not come from a Debian package here: not named.)
set(_dev_depends "jitcache (= ${PROJECT_VERSION})")
if(NOT JITCACHE_STATIC)
  string(PREPEND _dev_depends "libjitcache0 (= ${PROJECT_VERSION}), ")
endif()
set(_dev_suggests "")
if(JITCACHE_HAVE_OPENCL)
  list(APPEND _dev_suggests "ocl-icd-opencl-dev | opencl-dev")
endif()
if(JITCACHE_HAVE_HIP)
  list(APPEND _dev_suggests "libamdhip64-dev")
endif()
list(JOIN _dev_suggests ", " _dev_suggests)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_dev_depends}")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "${_dev_suggests}")

include(CPack)
