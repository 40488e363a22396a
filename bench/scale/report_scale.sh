#!/usr/bin/env bash
# How `cuaudit report` scales with the size of a trace (issue 13): synthetic traces of growing size
# (bench/scale/make_trace.cpp, the same live set and stacks each time), each reported REPS times;
# prints the trace's bytes per event, and the median wall time and peak memory of the report.
# No GPU needed. Usage: bench/scale/report_scale.sh BUILD_DIR [REPS] [EVENTS...]
#   (default: 3 repetitions of 1,000,000, 3,000,000 and 10,000,000 events with 1,000,000 live,
#   100,000 stacks, 64 threads; a size below the live set keeps a tenth of it live)
set -euo pipefail
build=${1:?usage: bench/scale/report_scale.sh BUILD_DIR [REPS] [EVENTS...]}
reps=${2:-3}
shift $(($# < 2 ? $# : 2))
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(1000000 3000000 10000000)
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "cuaudit report on synthetic traces ($(nproc) cores, medians of $reps):"
for events in "${sizes[@]}"; do
  live=1000000
  ((live > events)) && live=$((events / 10))
  rm -f "$work"/*.cutrace "$work"/*.json
  made=$("$build/bin/bench_make_trace" "$work" "$events" "$live" 100000 64)
  per_event=$(grep -o '[0-9.]* bytes per event' <<<"$made" | cut -d' ' -f1)
  bytes=$(stat -c %s "$work/trace-4242.cutrace")
  times="" memory=""
  for ((i = 0; i < reps; i++)); do
    out=$({ /usr/bin/time -f "TIME %e %M" "$build/bin/cuaudit" report "$work" --log-file /dev/null; } 2>&1 | grep '^TIME')
    times+="$(awk '{ print $2 }' <<<"$out") "
    memory+="$(awk '{ print $3 }' <<<"$out") "
  done
  printf "  %'12d events, %'9d live: trace %'14d bytes (%s per event), report %6.2f s, peak %'9d KiB   (runs: %s/ %s)\n" \
    "$events" "$live" "$bytes" "$per_event" "$(median <<<"$times")" "$(median <<<"$memory")" "$times" "$memory"
done
