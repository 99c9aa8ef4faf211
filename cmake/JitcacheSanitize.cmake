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
endif()
