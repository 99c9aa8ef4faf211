# Builds tests/downstream/project against jitcache as a user would get it, then runs both
# programs (C++ and C) twice each with a fresh JITCACHE_DIR: both hits from the package they
# embed (made at build time by the jitcache tool); the program built with pkg-config's flags,
# which embeds none: a miss, then a hit.
#
#   cmake -DMODE=install|build-tree|deb|static|subdirectory|fetchcontent|missing-component
#         -DBUILD_DIR=<jitcache build dir>
#         -DSOURCE_DIR=<jitcache source dir> -DWORK_DIR=<scratch dir> -P run_downstream.cmake
#
# install:    `cmake --install` into WORK_DIR/prefix, found through CMAKE_PREFIX_PATH; also
#             builds the C program with pkg-config's flags for jitcache.pc
# build-tree: jitcache_DIR is the build directory (export() of the build tree)
# deb:        `cpack -G DEB` from a build for /usr (BUILD_DIR, or one made in WORK_DIR), the
#             packages checked (check_debs.cmake) and unpacked with `dpkg -x` into WORK_DIR/root;
#             also builds the C program with pkg-config's flags
# static:     jitcache configured again with BUILD_SHARED_LIBS=OFF (the OpenCL backend only), built
#             (minutes), installed into WORK_DIR/prefix and found there; also builds the C program
#             with `pkg-config --static`'s flags
# subdirectory: add_subdirectory(<jitcache source>) with the OpenCL backend only; configure and
#             generate only unless -DBUILD_EMBEDDED=ON (which compiles jitcache again: minutes)
# fetchcontent: FetchContent of the source folder; likewise
# missing-component: asking for a backend that is not built must fail configure, naming it
# python-missing: jitcache configured without pybind11 must fail, saying what to install
cmake_minimum_required(VERSION 3.20)
foreach(var MODE BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_downstream.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(project_dir "${SOURCE_DIR}/tests/downstream/project")
set(downstream_build "${WORK_DIR}/downstream")

if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
  set(find_args "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
  set(prefix "${WORK_DIR}/prefix")
elseif(MODE STREQUAL "static")
  set(static_build "${WORK_DIR}/jitcache-static")
  # Not optimised (build type None) and built in batches of files (CMAKE_UNITY_BUILD): what the
  # mode checks is the static archive, its install and the links made from it, not the compiler's
  # work; its Release build took 400 s of CI's tests.
  set(static_args -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=None -DCMAKE_UNITY_BUILD=ON
                  -DJITCACHE_BUILD_TESTS=OFF
                  -DJITCACHE_BUILD_BENCH=OFF -DJITCACHE_PYTHON=OFF
                  -DJITCACHE_WITH_CUDA=OFF -DJITCACHE_WITH_HIP=OFF)
  if(LAUNCHER)
    list(APPEND static_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
  endif()
  run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${static_build}" ${static_args})
  run(${CMAKE_COMMAND} --build "${static_build}" --parallel 2)
  run(${CMAKE_COMMAND} --install "${static_build}" --prefix "${WORK_DIR}/prefix")
  file(GLOB archive "${WORK_DIR}/prefix/lib*/libjitcache.a")
  file(GLOB shared "${WORK_DIR}/prefix/lib*/libjitcache.so*")
  if(NOT archive OR shared)
    message(FATAL_ERROR "BUILD_SHARED_LIBS=OFF installed '${archive}' and '${shared}'")
  endif()
  set(find_args "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
  set(prefix "${WORK_DIR}/prefix")
elseif(MODE STREQUAL "subdirectory" OR MODE STREQUAL "fetchcontent")
  set(find_args "-DDOWNSTREAM_VIA=${MODE}" "-DDOWNSTREAM_JITCACHE_SOURCE=${SOURCE_DIR}"
                -DJITCACHE_WITH_CUDA=OFF -DJITCACHE_WITH_HIP=OFF)
  if(LAUNCHER) # the compiler launcher of jitcache's own build (ccache), for the rebuild
    list(APPEND find_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
  endif()
elseif(MODE MATCHES "^(build-tree|missing-component|python-missing)$")
  set(find_args "-Djitcache_DIR=${BUILD_DIR}")
elseif(MODE STREQUAL "deb")
  include("${SOURCE_DIR}/tests/downstream/check_debs.cmake")
  set(prefix "${WORK_DIR}/root/usr")
  set(find_args "-DCMAKE_PREFIX_PATH=${prefix}")
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()

if(MODE STREQUAL "python-missing")
  # The Python module is on by default: without pybind11, configure fails and says what to
  # install or how to turn the module off, rather than leaving the module out unnoticed.
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/jitcache"
                          -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON -DJITCACHE_BUILD_TESTS=OFF
                          -DJITCACHE_BUILD_BENCH=OFF
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "needs pybind11"
     OR NOT err MATCHES "pybind11-dev" OR NOT err MATCHES "-DJITCACHE_PYTHON=OFF")
    message(FATAL_ERROR "configure without pybind11: rc ${rc}, expected a failure naming "
                        "pybind11-dev and -DJITCACHE_PYTHON=OFF\n${out}\n${err}")
  endif()
  file(REMOVE_RECURSE "${WORK_DIR}")
  return()
endif()

if(MODE STREQUAL "missing-component")
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${project_dir}" -B "${downstream_build}"
                          ${find_args} "-DDOWNSTREAM_COMPONENTS=opencl;nosuchbackend"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "built without the 'nosuchbackend' backend")
    message(FATAL_ERROR "configure with a missing component: rc ${rc}, expected a failure "
                        "naming it\n${out}\n${err}")
  endif()
  return()
endif()

run(${CMAKE_COMMAND} -S "${project_dir}" -B "${downstream_build}" ${find_args}
    -DCMAKE_BUILD_TYPE=Release "-DDOWNSTREAM_KERNELS=${SOURCE_DIR}/kernels")
if(MODE MATCHES "^(subdirectory|fetchcontent)$" AND NOT BUILD_EMBEDDED)
  file(REMOVE_RECURSE "${WORK_DIR}")
  return()
endif()
run(${CMAKE_COMMAND} --build "${downstream_build}" --parallel 2)
# What embeds a package (jitcache_embed_packages) must keep a non-executable stack.
find_program(readelf readelf)
if(readelf)
  foreach(file app_cpp app_c libapp_kernels.so)
    if(NOT EXISTS "${downstream_build}/${file}")
      continue() # no library of packages beside a static jitcache (the project says why)
    endif()
    run(${CMAKE_COMMAND} -DREADELF=${readelf} "-DFILE=${downstream_build}/${file}"
        -P "${SOURCE_DIR}/tests/embed/check_stack.cmake")
  endforeach()
endif()

# The installed target must not point into the source tree.
if(DEFINED prefix)
  file(GLOB_RECURSE target_files "${prefix}/lib/*.cmake")
  foreach(f IN LISTS target_files)
    file(READ "${f}" text)
    string(FIND "${text}" "${SOURCE_DIR}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} names the source tree ${SOURCE_DIR}")
    endif()
  endforeach()
endif()

set(programs app_cpp app_c)
if(MODE MATCHES "^(install|static|deb)$")
  # pkg-config: the C program built by hand from jitcache.pc's flags (--static: with what the
  # archive needs linked).
  # lib/ or, for a /usr build on Debian, the multiarch folder lib/<triplet>/.
  file(GLOB_RECURSE pc_file "${prefix}/lib/*jitcache.pc")
  get_filename_component(pc_dir "${pc_file}" DIRECTORY)
  get_filename_component(lib_dir "${pc_dir}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  set(pc_static "")
  if(MODE STREQUAL "static")
    set(pc_static --static)
  endif()
  # app.c calls OpenCL itself: its flags come from OpenCL's own .pc, as a program's would.
  run(pkg-config ${pc_static} --cflags --libs jitcache OpenCL)
  string(STRIP "${run_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(cc -std=c99 -o "${downstream_build}/app_pc" "${project_dir}/app.c" ${flags}
      "-Wl,-rpath,${lib_dir}")
  list(APPEND programs app_pc)
endif()

foreach(program IN LISTS programs)
  set(ENV{JITCACHE_DIR} "${WORK_DIR}/cache-${program}")
  set(ENV{JITCACHE_OPENCL_STORE} "wait") # stored when the miss's process exits
  if(program STREQUAL "app_pc")
    set(outcomes "outcome=miss tier=compile" "outcome=hit tier=user")
  else()
    set(outcomes "outcome=hit tier=embedded" "outcome=hit tier=embedded")
  endif()
  foreach(expected IN LISTS outcomes)
    run("${downstream_build}/${program}" "${SOURCE_DIR}/kernels/vector_ops.cl"
        "${SOURCE_DIR}/kernels")
    if(NOT run_output MATCHES "${expected}")
      message(FATAL_ERROR "${program}: expected '${expected}', got '${run_output}'")
    endif()
    message(STATUS "${MODE} ${program}: ${run_output}")
  endforeach()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
