# The code a fresh process's hit runs, placed together in each library, module and program.
#
# A process touches each 64 KB window of a library's code for the first time with a page fault
# (about 2 to 4 us each). Laid out by file, a first hit reached half the windows of the NVRTC
# front-end's 1.7 MB of code: 13 faults, about a sixth of a 0.36 ms first hit on a 2-core VM
# (docs/PERFORMANCE.md, "The hit path's code in one place"). Every function gets a section of
# its own (-ffunction-sections) and the linker places the functions layout/hot_functions.txt
# names first, in its order: lld by symbol (--symbol-ordering-file), else gold by section
# (--section-ordering-file, the list rewritten as section names at configure time). The list is
# made by layout/record_hot_functions.py; a name it holds that no function has any more is
# passed over, and the layout test (tests/layout) fails when too many are.
#
# Left out of sanitized and fuzzing builds (not timed), and where neither linker is found: the
# default linker's layout then, nothing else differs. JITCACHE_CODE_LAYOUT_LINKER says which
# linker places the code ("lld", "gold" or empty).
option(JITCACHE_CODE_LAYOUT
       "Place the hit path's code together in the libraries and programs (needs lld or gold)" ON)
set(JITCACHE_HOT_FUNCTIONS ${CMAKE_CURRENT_LIST_DIR}/layout/hot_functions.txt)
set(JITCACHE_CODE_LAYOUT_LINKER "")
if(JITCACHE_CODE_LAYOUT AND NOT JITCACHE_SANITIZE AND NOT JITCACHE_FUZZ)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" JITCACHE_HAVE_LLD)
  if(NOT JITCACHE_HAVE_LLD)
    check_linker_flag(CXX "-fuse-ld=gold" JITCACHE_HAVE_GOLD)
  endif()
  if(JITCACHE_HAVE_LLD)
    set(JITCACHE_CODE_LAYOUT_LINKER lld)
    set(_layout_flags "-fuse-ld=lld \"-Wl,--symbol-ordering-file=${JITCACHE_HOT_FUNCTIONS}\""
                      " -Wl,--no-warn-symbol-ordering")
  elseif(JITCACHE_HAVE_GOLD)
    set(JITCACHE_CODE_LAYOUT_LINKER gold)
    # A constructor's or destructor's complete-object symbol (C1, D1) is most often an alias of
    # the base object's (C2, D2), whose name the section carries; static constructors are in
    # .text.startup.
    file(STRINGS ${JITCACHE_HOT_FUNCTIONS} _hot)
    set(_sections_text "")
    list(FILTER _hot EXCLUDE REGEX "^#") # the compiler it was recorded with
    foreach(name IN LISTS _hot)
      string(APPEND _sections_text ".text.${name}\n")
      if(name MATCHES "^(.*)([CD])1([EI].*)$")
        string(APPEND _sections_text ".text.${CMAKE_MATCH_1}${CMAKE_MATCH_2}2${CMAKE_MATCH_3}\n")
      elseif(name MATCHES "^_GLOBAL__sub_I_")
        string(APPEND _sections_text ".text.startup.${name}\n")
      endif()
    endforeach()
    set(_sections ${PROJECT_BINARY_DIR}/hot_sections.txt)
    file(WRITE ${_sections} "${_sections_text}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${JITCACHE_HOT_FUNCTIONS})
    set(_layout_flags "-fuse-ld=gold \"-Wl,--section-ordering-file=${_sections}\"")
  endif()
  if(JITCACHE_CODE_LAYOUT_LINKER)
    add_compile_options(-ffunction-sections)
    list(JOIN _layout_flags "" _layout_flags)
    foreach(kind SHARED MODULE EXE)
      string(APPEND CMAKE_${kind}_LINKER_FLAGS " ${_layout_flags}")
    endforeach()
    message(STATUS "jitcache: the hit path's code placed together by ${JITCACHE_CODE_LAYOUT_LINKER}")
  else()
    message(STATUS "jitcache: neither lld nor gold found; the libraries keep the default layout")
  endif()
endif()

# Relinks `targets` when the list changes (the linker reads it; nothing else tells the build),
# and, with tests, registers the layout test over them (tests/layout).
function(jitcache_code_layout_targets)
  if(NOT JITCACHE_CODE_LAYOUT_LINKER)
    return()
  endif()
  set(_files "")
  foreach(target IN LISTS ARGN)
    if(TARGET ${target})
      set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${JITCACHE_HOT_FUNCTIONS})
      list(APPEND _files $<TARGET_FILE:${target}>)
    endif()
  endforeach()
  if(JITCACHE_BUILD_TESTS)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    set(_check ${PROJECT_SOURCE_DIR}/tests/layout/check_layout.py)
    set(_compiler "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
    add_test(NAME code_layout
             COMMAND Python3::Interpreter ${_check} "${_compiler}" ${JITCACHE_HOT_FUNCTIONS} ${_files})
    # The list against what the NVRTC front-end's hit runs now (callgrind, about 30 s).
    find_program(JITCACHE_VALGRIND valgrind)
    if(JITCACHE_VALGRIND AND TARGET jitcache_nvrtc AND TARGET rtc_bench_nvrtc)
      list(GET CUDAToolkit_INCLUDE_DIRS 0 _cuda_include)
      add_test(NAME code_layout.current
               COMMAND Python3::Interpreter ${_check} "${_compiler}" --current
                       ${JITCACHE_HOT_FUNCTIONS} ${PROJECT_BINARY_DIR} ${_cuda_include})
      set_tests_properties(code_layout.current PROPERTIES SKIP_RETURN_CODE 77)
    endif()
  endif()
endfunction()
