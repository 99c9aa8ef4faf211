# cmake -DMODULE=<JitcacheEmbed.cmake> -DINCLUDE=<jitcache's include/> -DWORK_DIR=<scratch dir>
#       -P check_rebuild.cmake
# A project of one language (C, then C++ alone: the registering file follows it) embeds a file;
# its program registers it (a stand-in for jitcache's registry prints what it is given). After
# the file changes, a build re-assembles it and the program sees the new bytes.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(registry [=[
#include <jitcache/embed.h>
#include <stdio.h>
void jitcache_register_embedded_package(const char* name, const void* data, size_t size) {
  printf("%s %u %.*s\n", name, (unsigned)size, (int)size, (const char*)data);
}
int main(void) { return 0; }
]=])
foreach(language C CXX)
  set(source "${WORK_DIR}/${language}/source")
  set(build "${WORK_DIR}/${language}/build")
  file(REMOVE_RECURSE "${WORK_DIR}/${language}")
  if(language STREQUAL "C")
    set(main main.c)
  else()
    set(main main.cpp)
  endif()
  file(WRITE "${source}/${main}" "${registry}")
  file(WRITE "${source}/data.jcpkg" "first")
  file(WRITE "${source}/CMakeLists.txt" "cmake_minimum_required(VERSION 3.20)
project(embed_rebuild LANGUAGES ${language})
include(\"${MODULE}\")
add_executable(app ${main})
target_include_directories(app PRIVATE \"${INCLUDE}\")
jitcache_embed_packages(TARGET app PACKAGES data.jcpkg)
")
  run(${CMAKE_COMMAND} -S "${source}" -B "${build}")
  foreach(content "first" "second, longer")
    file(WRITE "${source}/data.jcpkg" "${content}")
    run(${CMAKE_COMMAND} --build "${build}")
    run("${build}/app")
    string(LENGTH "${content}" size)
    if(NOT run_output STREQUAL "data.jcpkg ${size} ${content}\n")
      message(FATAL_ERROR "${language}: expected 'data.jcpkg ${size} ${content}', got '${run_output}'")
    endif()
    message(STATUS "${language}: ${run_output}")
  endforeach()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
