# jitcache_make_package(OUTPUT <file> BACKEND cuda|hip|opencl [ARCH <target>] [OPTIONS <string>]
#                       FILE <kernel> [DEPENDS <file>...])
#
# A package made at build time by the jitcache tool built here (cmake/make_package.cmake): the
# kernel file built into a scratch user tier, then exported. Without ARCH it serves device 0
# of BACKEND on the build machine (OpenCL: PoCL). For the tests and benchmarks that embed
# packages (tests/embed, bench/opencl); DEPENDS names the headers the kernel includes.
include_guard(GLOBAL)

function(jitcache_make_package)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "OUTPUT;BACKEND;ARCH;OPTIONS;FILE" "DEPENDS")
  get_filename_component(name "${ARG_OUTPUT}" NAME)
  add_custom_command(OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:jitcache_cli> -DWORK_DIR=${ARG_OUTPUT}.work
            -DOUTPUT=${ARG_OUTPUT} -DBACKEND=${ARG_BACKEND} "-DARCH=${ARG_ARCH}"
            "-DOPTIONS=${ARG_OPTIONS}" -DFILE=${ARG_FILE}
            -P ${PROJECT_SOURCE_DIR}/cmake/make_package.cmake
    DEPENDS jitcache_cli ${ARG_FILE} ${ARG_DEPENDS} ${PROJECT_SOURCE_DIR}/cmake/make_package.cmake
    COMMENT "Making the package ${name} with the jitcache tool"
    VERBATIM)
endfunction()
