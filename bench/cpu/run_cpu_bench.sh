#!/usr/bin/env bash
# The CPU benchmarks (docs/PERFORMANCE.md): the recording paths (nanoseconds per pair), the
# launch checks (per launch) and the callback of a runtime call not recorded, from alternating
# rounds; the peers (LeakSanitizer, heaptrack) on host malloc/free pairs of the same depths; then
# the same rows under callgrind for instructions, which do not drift with the machine's load
# (perf's hardware counters are not available in every VM; callgrind is).
# Usage: bench/cpu/run_cpu_bench.sh BUILD_DIR [ROUNDS] [EVENTS]   (EVENTS: pairs, and launches)
set -euo pipefail
build=${1:?usage: bench/cpu/run_cpu_bench.sh BUILD_DIR [ROUNDS] [EVENTS]}
rounds=${2:-9}
events=${3:-200000}
record="$build/bin/bench_record_paths"
launch=("$build/bin/bench_launch_checks" "$build/bin/libstand_in_driver.so")
callbacks=("$build/bin/bench_callbacks" "$build/bin/libbench_callbacks_library.so")
echo "== time: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
"$record" "$rounds" "$events"
"${launch[@]}" "$rounds" "$events"
"${callbacks[@]}" "$rounds" "$((events * 5))"

# The peers on the same shapes: host malloc/free pairs (bench_host_pairs) alone, built with
# LeakSanitizer, and under heaptrack where installed; 3 alternating runs, the median, and what the
# tool adds to a pair (cuaudit's rows above are the recorder's work alone: no allocator in them).
peers() {
  local depth=$1 config runs
  declare -A got=()
  for _ in 1 2 3; do
    got[alone]+=" $("$build/bin/bench_host_pairs" "$depth" "$events" | awk '{ print $4 }')"
    got[lsan]+=" $("$build/bin/bench_host_pairs_lsan" "$depth" "$events" | awk '{ print $4 }')"
    if command -v heaptrack >/dev/null 2>&1; then
      got[heaptrack]+=" $(heaptrack -o "$peer_out/heaptrack" "$build/bin/bench_host_pairs" "$depth" "$events" 2>&1 |
        awk '/^host_pairs:/ { print $4 }')"
      rm -f "$peer_out"/heaptrack*
    fi
  done
  local alone
  alone=$(median "${got[alone]}")
  for config in alone lsan heaptrack; do
    runs=${got[$config]:-}
    [[ -z $runs ]] && continue
    local m
    m=$(median "$runs")
    printf '  %-64s %8.1f  (+%.1f; runs:%s)\n' "host malloc + free, $depth frames, $config" "$m" \
      "$(awk -v a="$m" -v b="$alone" 'BEGIN { print a - b }')" "$runs"
  done
}
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
peer_out=$(mktemp -d)
echo "== peers: ns per host malloc + free pair, median of 3 alternating runs of $events (+ what the tool adds)"
for depth in 10 20 40; do peers "$depth"; done
rm -rf "$peer_out"
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
count callbacks call "${callbacks[@]}"
rm -rf "$out"
