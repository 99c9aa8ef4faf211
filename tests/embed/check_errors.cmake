# cmake -DMODULE=<JitcacheEmbed.cmake> -DWORK_DIR=<scratch dir> -P check_errors.cmake
# Each misuse of jitcache_embed_packages() fails configure with a message naming what is wrong.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/source")
file(WRITE "${WORK_DIR}/source/main.c" "int main(void) { return 0; }\n")
file(WRITE "${WORK_DIR}/source/a.jcpkg" "a")
file(MAKE_DIRECTORY "${WORK_DIR}/source/other" "${WORK_DIR}/source/folder.jcpkg")
file(WRITE "${WORK_DIR}/source/other/a.jcpkg" "other a")

# case name; the call; what the error must say
set(cases
  "no-target|jitcache_embed_packages(PACKAGES a.jcpkg)|no TARGET given"
  "unknown-target|jitcache_embed_packages(TARGET nosuch PACKAGES a.jcpkg)|TARGET 'nosuch' is not a target"
  "no-packages|jitcache_embed_packages(TARGET app)|no PACKAGES given for target 'app'"
  "missing-file|jitcache_embed_packages(TARGET app PACKAGES a.jcpkg missing.jcpkg)|package file '[^']*/missing.jcpkg' \\(target 'app'\\) does not exist"
  "directory|jitcache_embed_packages(TARGET app PACKAGES folder.jcpkg)|package '[^']*/folder.jcpkg' \\(target 'app'\\) is a directory"
  "same-name|jitcache_embed_packages(TARGET app PACKAGES a.jcpkg other/a.jcpkg)|target 'app' embeds two packages named 'a.jcpkg'"
  "static-library|jitcache_embed_packages(TARGET lib PACKAGES a.jcpkg)|TARGET 'lib' is a STATIC_LIBRARY"
  "extra-argument|jitcache_embed_packages(TARGET app PACKAGE a.jcpkg)|unexpected arguments 'PACKAGE.a.jcpkg'")
foreach(case IN LISTS cases)
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 name)
  list(GET case 1 call)
  list(GET case 2 expected)
  file(WRITE "${WORK_DIR}/source/CMakeLists.txt" "cmake_minimum_required(VERSION 3.20)
project(embed_errors LANGUAGES C)
include(\"${MODULE}\")
add_executable(app main.c)
add_library(lib STATIC main.c)
${call}
")
  # One build folder for every case: the compilers are looked for once.
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${WORK_DIR}/source" -B "${WORK_DIR}/build"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX REPLACE "[ \n]+" " " err "${err}")
  if(rc EQUAL 0 OR NOT err MATCHES "jitcache_embed_packages: ${expected}")
    message(FATAL_ERROR "${name}: expected a configure error matching '${expected}', got rc ${rc}:\n${err}")
  endif()
  message(STATUS "${name}: refused as expected")
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
