# The Debian packages as a user gets them (included by run_downstream.cmake, MODE deb): made by
# cpack from a build for /usr, each checked for what it holds and needs, then unpacked with
# `dpkg -x` into WORK_DIR/root, where the installed tool and Python module are run. Uses run()
# and BUILD_DIR, SOURCE_DIR, WORK_DIR, LAUNCHER.
#
# A build for another prefix (BUILD_DIR's is /usr/local by default) must be refused by cpack,
# naming the prefix to configure: its library would read packages and start a tool where the
# .deb ships none. The packages are then made from a build of their own in WORK_DIR.

function(cache_value build name out)
  file(STRINGS "${build}/CMakeCache.txt" line REGEX "^${name}:[A-Z]+=")
  string(REGEX REPLACE "^[^=]*=" "" line "${line}")
  set(${out} "${line}" PARENT_SCOPE)
endfunction()

cache_value("${BUILD_DIR}" CMAKE_INSTALL_PREFIX build_prefix)
set(package_build "${BUILD_DIR}")
if(NOT build_prefix STREQUAL "/usr")
  execute_process(COMMAND cpack -G DEB --config "${BUILD_DIR}/CPackConfig.cmake"
                          -B "${WORK_DIR}/refused"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "CMAKE_INSTALL_PREFIX=/usr")
    message(FATAL_ERROR "cpack made Debian packages from a build for '${build_prefix}' (rc ${rc}); "
                        "expected a refusal naming -DCMAKE_INSTALL_PREFIX=/usr\n${out}\n${err}")
  endif()
  set(package_build "${WORK_DIR}/jitcache-usr")
  set(usr_args -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo
               -DJITCACHE_BUILD_TESTS=OFF -DJITCACHE_BUILD_BENCH=OFF)
  foreach(option JITCACHE_WITH_OPENCL JITCACHE_WITH_CUDA JITCACHE_WITH_HIP JITCACHE_PYTHON)
    cache_value("${BUILD_DIR}" ${option} value)
    list(APPEND usr_args "-D${option}=${value}")
  endforeach()
  if(LAUNCHER)
    list(APPEND usr_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}"
                         "-DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER}")
  endif()
  run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${package_build}" ${usr_args})
  run(${CMAKE_COMMAND} --build "${package_build}" --parallel 2)
endif()
cache_value("${package_build}" JITCACHE_PYTHON with_python)

run(cpack -G DEB --config "${package_build}/CPackConfig.cmake" -B "${WORK_DIR}/packages")
execute_process(COMMAND dpkg-architecture -qDEB_HOST_MULTIARCH OUTPUT_VARIABLE multiarch
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT multiarch)
  message(FATAL_ERROR "dpkg-architecture (dpkg-dev) gave no multiarch triplet")
endif()
set(libdir "usr/lib/${multiarch}")

# What each package must hold (a line of `dpkg-deb -c`, as a regular expression).
set(expected_packages libjitcache0 jitcache libjitcache-dev)
set(holds_libjitcache0 "./${libdir}/libjitcache\\.so\\.0[ \n]" "./usr/share/jitcache/packages/\n")
set(holds_jitcache "./usr/bin/jitcache\n" "./usr/share/jitcache/packages/\n")
set(holds_libjitcache-dev "./usr/include/jitcache/jitcache\\.h\n" "./${libdir}/libjitcache\\.so "
    "./${libdir}/cmake/jitcache/jitcacheConfig\\.cmake\n" "./${libdir}/pkgconfig/jitcache\\.pc\n")
if(with_python)
  list(APPEND expected_packages python3-jitcache)
  set(holds_python3-jitcache "./usr/lib/python3/dist-packages/jitcache/__init__\\.py\n"
      "./usr/lib/python3/dist-packages/jitcache/_jitcache[^/\n]*\\.so\n"
      "./usr/share/jitcache/packages/\n")
endif()

file(GLOB debs "${WORK_DIR}/packages/*.deb")
set(found_packages "")
foreach(deb IN LISTS debs)
  run(dpkg-deb --field "${deb}" Package)
  string(STRIP "${run_output}" package)
  list(APPEND found_packages ${package})
  run(dpkg-deb --field "${deb}" Depends Recommends Suggests)
  set(fields "${run_output}")
  message(STATUS "${package}:\n${fields}")
  run(dpkg-deb -c "${deb}")
  set(listing "${run_output}")
  # Nothing under /usr/local, and no library outside the multiarch folder.
  if(listing MATCHES "\\./usr/local/" OR listing MATCHES "\\./usr/lib/lib")
    message(FATAL_ERROR "${package} installs outside /usr's Debian folders:\n${listing}")
  endif()
  foreach(line IN LISTS holds_${package})
    if(NOT listing MATCHES "${line}")
      message(FATAL_ERROR "${package} lacks '${line}':\n${listing}")
    endif()
  endforeach()
  if(package STREQUAL "libjitcache-dev")
    string(REGEX MATCH "Depends: [^\n]*" depends "${fields}")
    if(depends MATCHES "hip|rocm|amd|cuda|nvidia")
      message(FATAL_ERROR "libjitcache-dev depends on a GPU vendor's stack: ${depends}")
    endif()
  endif()
  run(dpkg -x "${deb}" "${WORK_DIR}/root")
endforeach()
list(SORT found_packages)
list(SORT expected_packages)
if(NOT found_packages STREQUAL expected_packages)
  message(FATAL_ERROR "expected the packages '${expected_packages}', got '${found_packages}'")
endif()

# The installed tool and module, no variable set: the package folder they read is the one the
# packages ship, and the module stores through the tool installed with it.
set(root "${WORK_DIR}/root")
unset(ENV{JITCACHE_SYSTEM_PATH})
run("${root}/usr/bin/jitcache" info)
if(NOT run_output MATCHES "system path: \\[\"/usr/share/jitcache/packages\"\\]")
  message(FATAL_ERROR "the installed jitcache reads another package folder:\n${run_output}")
endif()
if(with_python)
  set(ENV{PYTHONPATH} "${root}/usr/lib/python3/dist-packages")
  execute_process(
    COMMAND /usr/bin/python3 -c [=[
import jitcache, jitcache._jitcache as m
print(jitcache.__file__)
print(m._store_worker())
print(m._system_path())
]=]
    WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  unset(ENV{PYTHONPATH})
  set(want "${root}/usr/lib/python3/dist-packages/jitcache/__init__.py\n${root}/usr/bin/jitcache\n"
           "['/usr/share/jitcache/packages']\n")
  string(CONCAT want ${want})
  if(NOT rc EQUAL 0 OR NOT out STREQUAL want)
    message(FATAL_ERROR "the installed Python module (rc ${rc}):\n${out}${err}\nexpected:\n${want}")
  endif()
endif()
