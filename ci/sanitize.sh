#!/usr/bin/env bash
# Builds jitcache with sanitizers and runs its tests under them (ci/test.sh calls it after the
# normal run; it needs what ci/install.sh installs):
#   asan  build-asan, AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer with them):
#         every ctest test except: the downstream ones (label downstream: they package jitcache
#         and build other projects against it, which checks packaging, not memory; the normal
#         run has them); the full-tmpfs, other-user, planted-link and random-kill tests; the
#         ten kinds of user-tier damage (DamageTest); the tests of many processes' order over valid
#         data (see below); and the Python module's tests (the module is not built here: an
#         instrumented extension needs the ASan runtime preloaded into an uninstrumented Python)
#   tsan  build-tsan, ThreadSanitizer: test_core and test_stress (but its killing test), where
#         many threads and processes share one cache (single flight, leases, the background
#         store, forks, the stress test)
# Arguments: asan, tsan or both (default both), then any ctest arguments (-R Cache: those tests
# only). Only the targets the tests need are built.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -d /usr/local/cuda/bin && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="$PATH:/usr/local/cuda/bin" # where the CUDA toolkit installs nvcc
fi
runs=()
while (($#)) && [[ $1 == asan || $1 == tsan ]]; do
  runs+=("$1")
  shift
done
((${#runs[@]})) || runs=(asan tsan)
# until-pass:2: LeakSanitizer's exit-time tracer itself has crashed under load ("Tracer caught
# signal 11 ... LeakSanitizer has encountered a fatal error"; use_tls=0 below removed the cause we
# found), failing a test that did nothing wrong; a test that fails for a reason of its own fails
# both times.
# --timeout 600: the slowest instrumented test takes under 2 minutes on 2 cores; a test that
# hangs (a retry would pass) costs CI no more than in the normal run.
ctest_args=(--output-on-failure -j "$(nproc)" --timeout 600 --repeat until-pass:2 "$@")
supp="$PWD/ci/sanitizers"

# Every report ends the test with a failure and a whole stack. protect_shadow_gap=0: the CUDA
# driver maps memory where ASan's shadow gap would be (without it, cuInit fails under ASan).
# use_sigaltstack=0: the LLVM inside comgr (hipRTC) finds ASan's alternate signal stack of a
# thread too small and installs a larger one from malloc, which ASan then fails to unmap when the
# thread ends ("failed to deallocate ... unable to unmap": HipCompile.ConcurrentRequests...).
# handle_segv=0, handle_sigbus=0: jitcache's fault guard (core/support/fault_guard) takes SIGSEGV and
# SIGBUS inside the store and hands every other fault to the action the process had before; with
# ASan's handler installed, that action would be ASan's report and exit 1, not the default death
# by the signal that the guard's tests check. A real fault still kills the test with the signal.
# max_malloc_fill_size=0: ASan fills the first 4 KB of every new allocation with 0xbe, a debugging
# aid (it finds no error; nothing is reported from it). LLVM's allocators inside PoCL take 4 KB
# slabs by the thousand, so each slab's page was faulted in at once: the damaged-cache CLI tests
# took 42 s against 57 s without it (DamagedCache.BuildsReturnEveryKernel...).
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:check_initialization_order=1:strict_init_order=1:protect_shadow_gap=0:use_sigaltstack=0:handle_segv=0:handle_sigbus=0:max_malloc_fill_size=0"
# use_tls=0: LeakSanitizer's exit-time tracer reads every thread's TLS, and a thread of PoCL's
# being torn down at exit crashes it ("Tracer caught signal 11: addr=0xb90", 4 of 4 runs of
# OpenclMultiDevice.ContextWithTwoDevices at once, 0 of 4 with this). TLS is then no root of
# reachability: a leak could only be over-reported, never missed.
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:use_tls=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# The randomized hostile-input tests run 200 trials per kind in the normal run; a sanitized
# process is several times slower (starting one takes 0.2 s, not 0.01 s), and an eighth of the
# trials still tries every kind.
export JITCACHE_HOSTILE_TRIALS=25
export JITCACHE_REPLACE_RUNS=12 # test_package_replace: an eighth of its CLI, C API and PoCL runs
# die_after_fork=0: the tests fork children of a process that has threads (the background store,
# the file watcher), and the children start threads of their own, as an application's would.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=$supp/tsan.supp:print_suppressions=0"

# -g1 (line tables: every frame of a report named by file and line) and assertions on. An
# instrumented build at -O2 -g takes three times the CPU of the normal build, at -O1 -g1 half
# again. ASan's tree is built at -O0: a quarter less than -O1 (test_cli and what it needs, 351 s
# against 482 s), and its CLI and damaged-cache tests ran no slower (141 s against 139 s).
# ThreadSanitizer's stays at -O1, as its documentation asks for speed. Files are compiled in
# batches (CMAKE_UNITY_BUILD; see ci/build.sh), but for the library, the tools and the front-ends
# in ASan's tree: its initialization-order check (strict_init_order above) looks between files,
# which must be the files the shipped build compiles one by one.
# ASan's tree is compiled by clang, ThreadSanitizer's by GCC as the shipped build: clang compiles
# the instrumented code 1.6 to 1.8 times as fast (the tree took 335 s against about 500 s), its
# UBSan data is a quarter of GCC's, and its UBSan checks what GCC's does not (the load of an enum
# value outside its range: jitcache_strerror's switch on a C caller's int). Its ASan runtime is
# linked as a shared library (cmake/JitcacheSanitize.cmake).
# ASan's executables are linked as position-dependent (-no-pie): UBSan's data for each check
# (57 MB of .data in the CLI at -O0) holds about 2 million pointers, which a position-independent
# executable relocates at every start. `jitcache --version` took 0.37 s, 0.15 s after; a test that
# starts the CLI a few hundred times (HostileFilesTest.DamagedRecordsReadByWarm) 78 s, 50 s after.
# The tests' own files are compiled there without UBSan (JITCACHE_CHECK_FLAGS), with ASan: what
# UBSan is run for is jitcache's code (the library, tools and front-ends, which keep it), and it
# made a test file's compile take 1.8 times as long and its data 30 times as large.
options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DJITCACHE_BUILD_BENCH=OFF -DJITCACHE_PYTHON=OFF)
if [[ -n "${CI:-}" ]]; then
  options+=(-DJITCACHE_WERROR=ON) # as ci/build.sh: CI fails on a warning
fi
jobs=$(nproc)

# A tree ctest has not run yet schedules its tests in the order they are defined, so a long test
# defined last (the 16-process stress test, 84 s under ThreadSanitizer) ran alone at the end. The
# normal run's durations (the same test names) let ctest start the longest first.
seed_costs() { # seed_costs TREE
  local from=build/Testing/Temporary/CTestCostData.txt to=$1/Testing/Temporary
  if [[ -f $from && ! -f $to/CTestCostData.txt ]]; then
    mkdir -p "$to"
    cp "$from" "$to/"
  fi
}

for run in "${runs[@]}"; do
  case "$run" in
    asan)
      # CC and CXX count only when a tree is first configured: a tree GCC configured (before
      # this tree moved to clang) would stay GCC's, so it is made again.
      if [[ -f build-asan/CMakeCache.txt ]] &&
        ! grep -q '^CMAKE_CXX_COMPILER:FILEPATH=.*clang++' build-asan/CMakeCache.txt; then
        rm -rf build-asan
      fi
      CC=clang CXX=clang++ cmake -S . -B build-asan "${options[@]}" -DJITCACHE_SANITIZE=address,undefined \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O0 -g1" \
        -DCMAKE_UNITY_BUILD=OFF -DJITCACHE_UNITY_TESTS=ON -DJITCACHE_WITH_MPI=OFF \
        -DCMAKE_EXE_LINKER_FLAGS=-no-pie -DJITCACHE_CHECK_FLAGS=-fno-sanitize=undefined
      # The build runs instrumented tools (the jitcache CLI making the test packages, the tuning
      # package's maker) with the leak check off: LeakSanitizer's exit-time tracer sometimes
      # crashes by itself ("Tracer caught signal 11"), and a build step is not retried as a test
      # is; the tests that run the same tools check their leaks.
      # Every target but those no test of this tree runs (see below): test_stress (both of its
      # tests are left out), test_damage and its harness (DamageTest), and the OpenCL layer's
      # tests, probe and layer (label opencl_layer). ctest names a test binary that was not
      # built <binary>_NOT_BUILT: those are left out below too; a new binary is built by default.
      # The targets are read from the Makefile's help (a generator without it builds them all).
      unbuilt='test_stress|test_damage|jitcache_damage_harness|test_opencl_layer'
      unbuilt+='|jitcache_opencl_layer_probe|jitcache_opencl_layer'
      utility='all|clean|depend|edit_cache|install|list_install_components|package|package_source'
      utility+='|rebuild_cache|test'
      mapfile -t targets < <(cmake --build build-asan --target help 2>/dev/null |
        sed -n 's/^\.\.\. \([A-Za-z0-9_]*\)$/\1/p' | grep -vxE "$utility|$unbuilt")
      ((${#targets[@]})) || targets=(all)
      ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" cmake --build build-asan -j "$jobs" \
        --target "${targets[@]}"
      # Left to the normal run: the check of the shipped library's exported symbols (at -O0 clang
      # emits the standard library's templates that return a jitcache type, std::forward<
      # jitcache::Cache&>, whose names match the export map's jitcache::*); the tests that fill a
      # small tmpfs, run as other users, plant links in the cache (PlantedLinks: 190 s of this
      # run's 1016 s) or kill processes at random test what lies between processes and the
      # filesystem, and run the same code as the damage and stress tests kept here.
      # The OpenCL layer's tests load it into programs that are not instrumented (PyOpenCL's
      # Python, a plain C program): they run in the normal tree (label opencl_layer). The MPI
      # tests (label mpi) too, and libjitcache_mpi is not built here (JITCACHE_WITH_MPI=OFF):
      # Open MPI's own allocations at exit are LeakSanitizer reports of its, not jitcache's
      # (the cohort's core runs in test_core here).
      # The user tier's ten kinds of damage (tests/stress, DamageTest: 70 to 85 s each here) run
      # in the normal tree. jitcache's own reading of damaged pages
      # (core/tiers/user/lmdb_page_check) meets every kind in test_core's PageCheck and
      # LmdbHealth tests, and the CLI's commands meet damaged caches in test_cli's DamagedCache
      # tests, which all run here; the rest of a damaged file is read by liblmdb, which is not
      # instrumented.
      # ForkSafeMutex.ChildrenForked...: children forked while threads of the parent allocate
      # and log, which tests jitcache's locks; a sanitizer's own allocator lock is not released
      # in such a child (a child hung in ASan's SizeClassAllocator64 in 3 of 3 runs), so they run
      # in the normal tree, where glibc's malloc is fork-safe. So does
      # LmdbRegistry.AChildForkedWhileAnotherThread... (a thread opens and closes a user tier
      # while children are forked).
      # Left to the normal run too, the tests whose subject is the order and timing of many
      # processes over valid data (which request each stores, waits, hand-overs, counts, a
      # tuning run, which header change misses): each process is slower to start than what it
      # does, they took about 430 s here, and the code they run is run here by the tests of
      # its own part (test_core) and by the hostile-input tests (request files, records,
      # packages, option strings), which all stay. The stress test of 16 processes (65 to 87 s
      # here) is one of them: it runs in the normal tree and under ThreadSanitizer.
      coordination='StoreModeTest\.(RunsWhile|ThirtyThousand|CliBuild|AStoredKeys|EightProcesses|WaitStores|Killing|Detach|WaitForStores|ARelativeCacheDir|TheWaitStoringItself)|WarmTest\.ManyProcesses|ListTest\.Counts|ConfigCommandTest\.(Concurrent|ASizeLimitSetOnce)|PortablePackageTest\.ManyProcesses|TuningOpenclTest\.|ExactKeysTest\.|StressTest\.SixteenProcesses'
      seed_costs build-asan
      ci/ctest.sh build-asan "${ctest_args[@]}" -LE '^(downstream|opencl_layer|mpi)$' \
        -E "shared_library_exports|SmallTmpfs\.|ForeignCache\.|PlantedLinks\.|KilledAtAnyMoment|ForkSafeMutex\.ChildrenForked|LmdbRegistry\.AChildForkedWhile|EveryKind/DamageTest\.|_NOT_BUILT$|$coordination"
      ;;
    tsan)
      # The stress test (PoCL) is required here: without OpenCL nothing would run many processes.
      cmake -S . -B build-tsan "${options[@]}" -DJITCACHE_SANITIZE=thread -DJITCACHE_WITH_OPENCL=ON \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" \
        -DCMAKE_UNITY_BUILD=ON
      cmake --build build-tsan -j "$jobs" --target test_core test_stress
      # KilledAtAnyMoment kills processes at random moments: what it tests lies between
      # processes, which ThreadSanitizer does not see, and under it the test takes 7 minutes.
      # FaultGuard raises real SIGSEGV/SIGBUS: ThreadSanitizer wraps signal handlers and defers
      # delivery, so a fault never reaches the guard's handler on the faulting thread (the
      # guard's tests, and the package reads that fault on purpose, run in the normal and the
      # ASan trees).
      # ForkSafeMutex.ChildrenForked... and LmdbRegistry.AChildForkedWhile...: see the ASan run
      # above (its die_after_fork is on by default for the same reason); the first passed 18 of
      # 18 runs here, which does not make them safe.
      seed_costs build-tsan
      # PageCheckTest.RandomDamage...: one thread checks 200 damaged copies of a file, every
      # byte read instrumented (53 s here, 1.4 s in the normal tree): nothing lies between
      # threads there; the normal and ASan trees run it.
      ci/ctest.sh build-tsan "${ctest_args[@]}" -L '^test_(core|stress)$' \
        -E 'KilledAtAnyMoment|FaultGuard\.|TruncatedUnderItsMapping|ReplacedWhileMapped|ForkSafeMutex\.ChildrenForked|LmdbRegistry\.AChildForkedWhile|PageCheckTest\.RandomDamage'
      ;;
  esac
done
