#!/usr/bin/env bash
# How `cuaudit report` scales with the size of a trace (issue 13): synthetic traces of growing size
# (bench/scale/make_trace.cpp, the same live set and stacks each time), each reported REPS times;
# prints the trace's bytes per event, and the median wall time and peak memory of the report (with
# the spread: every run's figures). No GPU needed. The sizes are reported in turn within each
# repetition, so a machine's slow moment does not fall on one size alone.
# Usage: bench/scale/report_scale.sh BUILD_DIR [REPS] [EVENTS...]
#   (default: 3 repetitions of 1,000,000, 10,000,000 and 100,000,000 events with 1,000,000 live,
#   100,000 stacks, 64 threads; a size below the live set keeps a tenth of it live). The traces are
#   written under $TMPDIR (100,000,000 events take about 2.5 GB).
set -euo pipefail
build=${1:?usage: bench/scale/report_scale.sh BUILD_DIR [REPS] [EVENTS...]}
reps=${2:-3}
shift $(($# < 2 ? $# : 2))
sizes=("$@")
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ ${#sizes[@]} -eq 0 ]] && sizes=(1000000 10000000 100000000)
declare -A times memory per_event live_of
for events in "${sizes[@]}"; do
  live=1000000
  ((live > events)) && live=$((events / 10))
  live_of[$events]=$live
  mkdir -p "$work/$events"
  made=$("$build/bin/bench_make_trace" "$work/$events" "$events" "$live" 100000 64)
  per_event[$events]=$(grep -o '[0-9.]* bytes per event' <<<"$made" | cut -d' ' -f1)
done
for ((i = 0; i < reps; i++)); do
  for events in "${sizes[@]}"; do
    rm -f "$work/$events"/*.json
    out=$("$build/bin/bench_peak_rss" "$build/bin/cuaudit" report "$work/$events" --log-file /dev/null 2>&1 >/dev/null |
      grep '^peak_rss:')
    times[$events]+="$(awk '{ print $2 }' <<<"$out") "
    memory[$events]+="$(awk '{ print $4 }' <<<"$out") "
  done
done
echo "cuaudit report on synthetic traces ($(nproc) cores, medians of $reps):"
for events in "${sizes[@]}"; do
  bytes=$(stat -c %s "$work/$events/trace-4242.cutrace")
  printf "  %'12d events, %'9d live: trace %'14d bytes (%s per event), report %6.2f s, peak %'9d KiB   (runs: %s/ %s)\n" \
    "$events" "${live_of[$events]}" "$bytes" "${per_event[$events]}" "$(median <<<"${times[$events]}")" \
    "$(median <<<"${memory[$events]}")" "${times[$events]}" "${memory[$events]}"
done
