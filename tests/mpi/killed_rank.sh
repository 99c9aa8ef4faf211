#!/usr/bin/env bash
# ctest mpi.killed_rank: a rank killed while it compiles for the others
#   - ends a plain MPI job (Open MPI aborts a job whose rank died) within a bound, not a hang;
#   - under mpirun --enable-recovery, the others carry on: they end with correct programs (each
#     run), the kernel the dead rank owed compiled by its asker once the 5 s timeout passed;
# and the next job on the same user tier finds it healthy (the dead ranks' leases and compile
# slots released, no damaged entry): its programs right, `jitcache verify` clean. The jobs are
# MpiCohortKilled.* in test_mpi.
# usage: killed_rank.sh JITCACHE_CLI TEST_MPI MPIRUN [MPIRUN ARGUMENTS...]
set -uo pipefail
cli=$1 test_mpi=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "killed_rank.sh: $*" >&2
  exit 1
}
export TMPDIR=$work JITCACHE_MPI_JOB_DIR=$work/job
mkdir -p "$JITCACHE_MPI_JOB_DIR"

timeout 100 "$@" -np 4 "$test_mpi" --gtest_filter='MpiCohortKilled.FirstJob*' >"$work/first.log" 2>&1
status=$?
((status == 124)) && fail "the job with a killed rank hung: $(tail -20 "$work/first.log")"
((status == 0)) && fail "the job with a killed rank ended well: $(tail -20 "$work/first.log")"
grep -q "signal 9" "$work/first.log" || fail "no rank was killed: $(tail -20 "$work/first.log")"
echo "killed_rank.sh: the first job ended (exit $status) after a rank was killed"

# The dead rank may also be owed kernel 0 by another rank: a send to the dead. Open MPI 4.1's
# MPI_Finalize sometimes waits for the dead rank there (its PMIx fence: seen in 7 of 78 such
# jobs, 0 of 16 without that send, each time after every other rank had passed): that wait is
# bounded here, and only what the ranks did before MPI_Finalize is judged.
# A user tier of its own: the first job's survivors may have stored kernel 4 before Open MPI
# ended them, and then no rank would compile it here.
mkdir -p "$work/recovery"
JITCACHE_MPI_JOB_DIR=$work/recovery timeout 30 "$@" --enable-recovery -np 4 "$test_mpi" \
  --gtest_filter='MpiCohortKilled.FirstJob*' >"$work/recovery.log" 2>&1
status=$?
passed=$(grep -c "PASSED" "$work/recovery.log")
((passed == 3)) || fail "under --enable-recovery, $passed of the 3 other ranks passed (exit $status): $(tail -40 "$work/recovery.log")"
grep -q "rank [13] did not hand over .* in time; compiling it here" "$work/recovery.log" ||
  fail "no rank compiled what the dead rank owed: $(tail -40 "$work/recovery.log")"
((status == 124)) && echo "killed_rank.sh: (Open MPI's MPI_Finalize waited for the dead rank; stopped)"
echo "killed_rank.sh: under --enable-recovery, the 3 other ranks built every program right"

timeout 100 "$@" -np 4 "$test_mpi" --gtest_filter='MpiCohortKilled.SecondJob*' >"$work/second.log" 2>&1 ||
  fail "the next job (exit $?): $(tail -40 "$work/second.log")"
grep -q "PASSED" "$work/second.log" || fail "the next job ran no test: $(tail -20 "$work/second.log")"
echo "killed_rank.sh: the next job built every program right"

JITCACHE_DIR=$work/job/user "$cli" verify >"$work/verify.log" 2>&1 ||
  fail "jitcache verify: $(cat "$work/verify.log")"
echo "killed_rank.sh: jitcache verify: $(tail -1 "$work/verify.log")"
