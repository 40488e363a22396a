#!/usr/bin/env bash
# The CPU benchmarks (docs/PERFORMANCE.md): the recording paths (nanoseconds per pair) and the
# launch checks (per launch) from alternating rounds, then the same rows under callgrind for
# instructions, which do not drift with the machine's load (perf's hardware counters are not
# available in every VM; callgrind is).
# Usage: bench/cpu/run_cpu_bench.sh BUILD_DIR [ROUNDS] [EVENTS]   (EVENTS: pairs, and launches)
set -euo pipefail
build=${1:?usage: bench/cpu/run_cpu_bench.sh BUILD_DIR [ROUNDS] [EVENTS]}
rounds=${2:-9}
events=${3:-200000}
record="$build/bin/bench_record_paths"
launch=("$build/bin/bench_launch_checks" "$build/bin/libstand_in_driver.so")
echo "== time: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
"$record" "$rounds" "$events"
"${launch[@]}" "$rounds" "$events"
if ! command -v valgrind >/dev/null 2>&1; then
  echo "== instructions: valgrind is not installed (apt-get install valgrind): not counted"
  exit 0
fi
out=$(mktemp -d)
counted=$((events / 10))
# Each row's dump: "desc: Trigger: Client Request: <row>" and "summary: <instructions>".
count() {
  local name=$1 unit=$2
  shift 2
  valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out/$name.%p" "$@" 1 "$counted" \
    >/dev/null 2>"$out/$name.log"
  echo "== instructions per $unit (callgrind, one round of $counted)"
  for f in "$out/$name".*[0-9]; do
    awk -v n="$counted" '/^desc: Trigger: Client Request: / { sub(/^desc: Trigger: Client Request: /, ""); row = $0 }
         /^(summary|totals): / && row != "" { printf "  %-64s %8.0f\n", row, $2 / n; row = "" }' "$f"
  done
}
count record pair "$record"
count launch launch "${launch[@]}"
rm -rf "$out"
