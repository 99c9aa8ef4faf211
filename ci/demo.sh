#!/usr/bin/env bash
# Installs dependencies, builds, then builds every sample OpenCL kernel on PoCL in fresh
# processes: cold (empty jitcache, empty PoCL cache), then warm (a hit from the user tier).
# Prints a table with the speedup.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install.sh
ci/build.sh > /dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export JITCACHE_DIR="$work/jitcache" POCL_CACHE_DIR="$work/pocl"
jitcache=build/tools/jitcache/jitcache
for kernel in kernels/*.cl; do
  "$jitcache" build --backend opencl --options "-I kernels" --json --wait "$kernel" >> "$work/cold.jsonl"
done
for kernel in kernels/*.cl; do
  "$jitcache" build --backend opencl --options "-I kernels" --json "$kernel" >> "$work/warm.jsonl"
done
python3 - "$work/cold.jsonl" "$work/warm.jsonl" <<'PY'
import json, sys
cold = [json.loads(l) for l in open(sys.argv[1])]
warm = [json.loads(l) for l in open(sys.argv[2])]
print(f"{'kernel':<22}{'cold (ms)':>12}{'warm (ms)':>12}{'speedup':>10}  warm from")
for c, w in zip(cold, warm):
    assert c["outcome"] == "miss" and w["outcome"] == "hit", (c, w)
    print(f"{c['file']:<22}{c['total_ms']:>12.1f}{w['total_ms']:>12.2f}"
          f"{c['total_ms'] / w['total_ms']:>9.0f}x  {w['tier']}")
PY
"$jitcache" stats
