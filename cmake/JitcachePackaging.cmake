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
set(CPACK_PACKAGE_NAME jitcache)
set(CPACK_PACKAGE_VENDOR "jitcache")
set(CPACK_PACKAGE_CONTACT "jitcache maintainers <jitcache@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Caches JIT-compiled GPU kernels (OpenCL, CUDA, HIP)")
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
