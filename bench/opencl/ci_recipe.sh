#!/bin/sh
# The CI recipe of docs/OPERATIONS.md ("Saving a cache between CI jobs"), run as two CI jobs on
# PoCL in the default store mode (issue 29): each restores the cache the job before saved, runs
# the tests (processes building the sample programs at once), waits for the pending stores with
# `jitcache store --wait`, and saves the cache (tar). The second job is a fresh machine: its
# cache is restored into another directory and PoCL's own cache is empty.
# Checked from `jitcache stats --json` (the job's counters: after minus before): the first job
# compiles each program once, the second compiles nothing and hits every program. Exit 0 when
# so; run by ctest as opencl.ci_recipe.
#
# usage: ci_recipe.sh JITCACHE KERNELS [PROCESSES]
#   JITCACHE   the jitcache executable;  KERNELS   the folder of the sample programs (*.cl)
#   PROCESSES  the test processes of a job, started at once (default 4)
set -eu
jitcache=$1
kernels=$2
processes=${3:-4}
work=$(mktemp -d "${TMPDIR:-/tmp}/jitcache-ci-recipe.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset JITCACHE_OPENCL_STORE JITCACHE_READONLY JITCACHE_DISABLE # the default store mode
programs=$(ls "$kernels"/*.cl | wc -l)

# counter NAME: the OpenCL counter NAME of the cache (the first line of `stats --json`).
counter() {
  "$jitcache" stats --json | head -n 1 | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"
}

# job NAME: one CI job; sets compiles, warm_builds, misses and hits to what the job added.
job() {
  export JITCACHE_DIR="$work/$1/cache" POCL_CACHE_DIR="$work/$1/pocl"
  mkdir -p "$JITCACHE_DIR" "$POCL_CACHE_DIR"
  # 1. restore the cache (the CI's cache step)
  if [ -f "$work/saved.tar" ]; then
    tar -xf "$work/saved.tar" -C "$JITCACHE_DIR"
  fi
  for name in compiles warm_builds misses hits; do
    eval "before_$name=\$(counter $name)"
  done
  # 2. the tests: processes building the programs, all at once
  pids=
  i=0
  while [ "$i" -lt "$processes" ]; do
    "$jitcache" build --backend opencl --options "-I $kernels" "$kernels"/*.cl \
      > "$work/$1/build-$i.log" 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
  done
  for pid in $pids; do
    if ! wait "$pid"; then
      cat "$work/$1"/build-*.log >&2
      echo "ci_recipe: $1: a test process failed" >&2
      exit 1
    fi
  done
  # 3. every pending store done
  start=$(date +%s)
  "$jitcache" store --wait --timeout 600 > /dev/null
  waited=$(($(date +%s) - start))
  # 4. save the cache
  tar -cf "$work/saved.tar" -C "$JITCACHE_DIR" .
  for name in compiles warm_builds misses hits; do
    eval "$name=\$((\$(counter $name) - \$before_$name))"
  done
  echo "$1: $processes processes x $programs programs: compiles $compiles," \
    "warm_builds $warm_builds, misses $misses, hits $hits; store --wait ${waited} s;" \
    "saved $(wc -c < "$work/saved.tar") bytes"
}

job first
if [ "$compiles" -ne "$programs" ]; then
  echo "ci_recipe: the first job compiled $compiles times, not once per program ($programs)" >&2
  exit 1
fi
job fresh
if [ "$compiles" -ne 0 ] || [ "$warm_builds" -ne 0 ] || [ "$misses" -ne 0 ] ||
  [ "$hits" -ne $((processes * programs)) ]; then
  echo "ci_recipe: the fresh job did not hit every program: compiles $compiles," \
    "warm_builds $warm_builds, misses $misses, hits $hits" >&2
  exit 1
fi
echo "ci_recipe: the saved cache served the fresh job with zero compiles"
