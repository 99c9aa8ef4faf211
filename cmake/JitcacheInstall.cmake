# `cmake --install`: the public headers, libjitcache.so (or libjitcache.a), the CLI, the CMake package (installed
# and, for consumers of the build tree, exported into the build directory) and jitcache.pc.
# Components, which CPack turns into one Debian package each (cmake/JitcachePackaging.cmake):
# "lib" (libjitcache.so.0), "cli" (the jitcache tool), "dev" (headers, CMake files, jitcache.pc,
# the libjitcache.so link) and "python" (python/). The system package folder that the library
# reads is in lib, cli and python alike (each reads it; dpkg shares a folder between packages).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(JITCACHE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/jitcache)
set_target_properties(jitcache_cli PROPERTIES EXPORT_NAME cli)

install(TARGETS jitcache jitcache_cli EXPORT jitcacheTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(DIRECTORY include/jitcache DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
# The tool's manual page, compressed as Debian's policy asks (man reads it either way).
find_program(JITCACHE_GZIP gzip)
set(_manual ${PROJECT_SOURCE_DIR}/cmake/deb/cli/jitcache.1)
if(JITCACHE_GZIP)
  execute_process(COMMAND ${JITCACHE_GZIP} -9nc ${_manual}
                  OUTPUT_FILE ${PROJECT_BINARY_DIR}/jitcache.1.gz)
  set(_manual ${PROJECT_BINARY_DIR}/jitcache.1.gz)
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/cmake/deb/cli/jitcache.1)
install(FILES ${_manual} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT cli)
# Read-only kernel packages installed system-wide (issue 13) go here.
set(_components lib cli)
if(JITCACHE_PYTHON)
  list(APPEND _components python)
endif()
foreach(component IN LISTS _components)
  install(DIRECTORY DESTINATION ${CMAKE_INSTALL_DATADIR}/jitcache/packages COMPONENT ${component})
endforeach()

install(EXPORT jitcacheTargets NAMESPACE jitcache:: DESTINATION ${JITCACHE_CMAKE_DIR}
        COMPONENT dev)
export(EXPORT jitcacheTargets NAMESPACE jitcache::
       FILE ${PROJECT_BINARY_DIR}/jitcacheTargets.cmake)

# One config file serves the install tree and the build tree: it finds everything relative to
# its own folder.
configure_file(cmake/jitcacheConfig.cmake.in ${PROJECT_BINARY_DIR}/jitcacheConfig.cmake @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/jitcacheConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
foreach(module FindJitcacheHip JitcacheEmbed)
  configure_file(cmake/${module}.cmake ${PROJECT_BINARY_DIR}/${module}.cmake COPYONLY)
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/jitcacheConfig.cmake
              ${PROJECT_BINARY_DIR}/jitcacheConfigVersion.cmake
              cmake/FindJitcacheHip.cmake
              cmake/JitcacheEmbed.cmake
        DESTINATION ${JITCACHE_CMAKE_DIR} COMPONENT dev)

# pkg-config: relative to the .pc file, so a package unpacked anywhere (dpkg -x) still works.
# jitcache.pc names jitcache's own flags: a backend's header needs its SDK's, which a program using
# that runtime asks for itself (`pkg-config --cflags --libs jitcache OpenCL`), as the -dev package
# only suggests the SDKs; no SDK folder of the build machine goes into the file.
set(JITCACHE_PC_CFLAGS "")
if(JITCACHE_HAVE_HIP)
  string(APPEND JITCACHE_PC_CFLAGS " -D__HIP_PLATFORM_AMD__")
endif()
# A static jitcache (BUILD_SHARED_LIBS=OFF): what `pkg-config --static --libs jitcache` adds.
set(JITCACHE_PC_STATIC "")
if(JITCACHE_STATIC)
  set(_requires "lmdb libxxhash hiredis libcrypto")
  if(JITCACHE_HAVE_OPENCL)
    string(APPEND _requires " OpenCL")
  endif()
  # -lm: jitcache's own <cmath> calls (a tuning record's times, llround), and what libstdc++
  # needs, which a C program's link (cc, not c++) does not add by itself.
  set(JITCACHE_PC_STATIC "Requires.private: ${_requires}\nLibs.private: -ldl -lpthread -lstdc++ -lm")
endif()
file(RELATIVE_PATH JITCACHE_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" JITCACHE_PC_TO_PREFIX "${JITCACHE_PC_TO_PREFIX}")
configure_file(cmake/jitcache.pc.in ${PROJECT_BINARY_DIR}/jitcache.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/jitcache.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
