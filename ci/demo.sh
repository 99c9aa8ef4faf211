#!/usr/bin/env bash
# Installs dependencies, builds, then builds every sample OpenCL kernel on PoCL in fresh
# processes: cold (empty jitcache, empty PoCL cache), then warm (a hit from the user tier).
# Prints a table with the speedup.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The build takes minutes: its progress ("[ 42%] Building ...") on one line rewritten in place
# on a terminal, a line per step otherwise; the whole log when it fails.
echo "building jitcache (ci/build.sh)..." >&2
if ! ci/build.sh 2>&1 | tee "$work/build.log" | while IFS= read -r line; do
  if [[ "$line" == "["*"%]"* ]]; then
    if [[ -t 2 ]]; then printf '\r\033[K%s' "${line:0:120}" >&2; else echo "$line" >&2; fi
  fi
done; then
  [[ -t 2 ]] && echo >&2
  cat "$work/build.log" >&2
  exit 1
fi
[[ -t 2 ]] && echo >&2
export JITCACHE_DIR="$work/jitcache" POCL_CACHE_DIR="$work/pocl"
jitcache=build/tools/jitcache/jitcache
for kernel in kernels/*.cl; do
  echo "compiling $kernel (cold: empty caches)..." >&2
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
