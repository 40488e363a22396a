#!/usr/bin/env bash
# The recording paths' CPU benchmark (docs/PERFORMANCE.md): nanoseconds per pair from alternating
# rounds, then the same rows under callgrind for instructions per pair, which do not drift with
# the machine's load (perf's hardware counters are not available in every VM; callgrind is).
# Usage: bench/cpu/run_cpu_bench.sh BUILD_DIR [ROUNDS] [PAIRS]
set -euo pipefail
build=${1:?usage: bench/cpu/run_cpu_bench.sh BUILD_DIR [ROUNDS] [PAIRS]}
rounds=${2:-9}
pairs=${3:-200000}
bench="$build/bin/bench_record_paths"
echo "== time: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
"$bench" "$rounds" "$pairs"
if ! command -v valgrind >/dev/null 2>&1; then
  echo "== instructions: valgrind is not installed (apt-get install valgrind): not counted"
  exit 0
fi
out=$(mktemp -d)
counted=$((pairs / 10))
valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out/cg.%p" "$bench" 1 "$counted" >/dev/null 2>"$out/valgrind.log"
echo "== instructions per pair (callgrind, one round of $counted pairs)"
# Each row's dump: "desc: Trigger: Client Request: <row>" and "summary: <instructions>".
for f in "$out"/cg.*; do
  awk -v pairs="$counted" '/^desc: Trigger: Client Request: / { sub(/^desc: Trigger: Client Request: /, ""); row = $0 }
       /^(summary|totals): / && row != "" { printf "  %-64s %8.0f\n", row, $2 / pairs; row = "" }' "$f"
done
rm -rf "$out"
