# CPack: two Debian packages from the install components (`cpack -G DEB` in the build directory).
#   jitcache         the shared library, the CLI and the system package folder (component runtime)
#   libjitcache-dev  headers, the CMake package, jitcache.pc, the libjitcache.so link (component dev)
set(CPACK_PACKAGE_NAME jitcache)
set(CPACK_PACKAGE_VENDOR "jitcache")
set(CPACK_PACKAGE_CONTACT "jitcache maintainers <jitcache@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Caches JIT-compiled GPU kernels (OpenCL, CUDA, HIP)")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME jitcache)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libjitcache-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)

# The runtime package's library dependencies come from the binaries themselves; the CUDA and
# HIP runtimes are opened with dlopen at first use, so neither is a dependency.
find_program(JITCACHE_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(JITCACHE_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
else()
  set(_runtime_depends "libc6, libstdc++6, liblmdb0, libxxhash0, libssl3, libhiredis0.14")
  if(JITCACHE_HAVE_OPENCL)
    string(APPEND _runtime_depends ", ocl-icd-libopencl1 | libopencl1")
  endif()
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "${_runtime_depends}")
endif()

# The dev package: the library of the same version, and the SDK headers the public headers
# include (the CUDA toolkit's cuda.h does not come from a Debian package here: not listed).
set(_dev_depends "jitcache (= ${PROJECT_VERSION})")
if(JITCACHE_HAVE_OPENCL)
  string(APPEND _dev_depends ", ocl-icd-opencl-dev | opencl-dev, opencl-c-headers")
endif()
if(JITCACHE_HAVE_HIP)
  string(APPEND _dev_depends ", libamdhip64-dev")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_dev_depends}")

include(CPack)
