# JITCACHE_SANITIZE: the sanitizers every target of this build is compiled and linked with
# ("address,undefined", "thread", ...; empty: none). Applied to the whole build, tests and the
# CLI included, so a test that runs the CLI in a child process runs it sanitized too. The
# runtimes jitcache opens (PoCL and the LLVM inside it, NVRTC, hipRTC) stay uninstrumented, which
# the sanitizers allow; ci/sanitize.sh sets the runtime options and the suppressions for them.
set(JITCACHE_SANITIZE "" CACHE STRING
    "Sanitizers to build with: a -fsanitize= list such as address,undefined or thread (empty: none)")
# A test's time limit (seconds): instrumented code runs several times slower (ThreadSanitizer's
# 5 to 15 times), so the sanitized trees give each test three times as long.
set(JITCACHE_TEST_TIMEOUT 300)
if(JITCACHE_SANITIZE)
  set(JITCACHE_TEST_TIMEOUT 900)
  if(JITCACHE_SANITIZE MATCHES "thread" AND JITCACHE_SANITIZE MATCHES "address|leak")
    message(FATAL_ERROR "JITCACHE_SANITIZE: ThreadSanitizer cannot be combined with "
                        "AddressSanitizer or LeakSanitizer ('${JITCACHE_SANITIZE}')")
  endif()
  # Frame pointers give whole stacks in every report at little cost; a UBSan finding stops the
  # test (-fno-sanitize-recover) instead of printing a line that a passing test hides.
  add_compile_options(-fsanitize=${JITCACHE_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${JITCACHE_SANITIZE})
  # Clang links its AddressSanitizer runtime into executables only, statically: a shared library
  # (linked -z defs) would find the runtime's symbols undefined. -shared-libasan links every
  # target against the runtime's shared library, found through an RPATH (the tests start
  # processes with a cleared environment, so LD_LIBRARY_PATH could not name it).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND JITCACHE_SANITIZE MATCHES "address")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                    OUTPUT_VARIABLE _asan_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
    get_filename_component(_asan_runtime_dir "${_asan_runtime}" DIRECTORY)
    add_link_options(-shared-libasan "LINKER:-rpath,${_asan_runtime_dir}")
  endif()
endif()
