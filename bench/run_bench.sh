#!/usr/bin/env bash
# Runs each benchmark natively and under cuaudit (and the seeds' experiment under
# compute-sanitizer --leak-check full, where installed), alternating the configurations REPS times
# (default 5) so that drift on the machine hits them alike, and prints the median of each and the
# ratios of the medians. Usage: bench/run_bench.sh BUILD_DIR [REPS] [launch]
# ("launch": only the launch benchmark, for a closer look at its small differences)
set -euo pipefail
build=${1:?usage: bench/run_bench.sh BUILD_DIR [REPS]}
reps=${2:-5}
only=${3:-all}
bin="$build/bin"
figure() { grep -o '[0-9.]* [nu]s per \(pair\|launch\)' | cut -d' ' -f1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

declare -A runs
for ((i = 0; i < reps; i++)); do
  runs[launch_native]+="$("$bin/bench_launch_rate" 200000 | figure) "
  runs[launch_cuaudit]+="$("$bin/cuaudit" --log-file /dev/null "$bin/bench_launch_rate" 200000 | figure) "
  runs[launch_nocheck]+="$("$bin/cuaudit" --check-launch-params no --log-file /dev/null "$bin/bench_launch_rate" 200000 | figure) "
  [[ $only == launch ]] && continue
  runs[pairs_native]+="$("$bin/bench_alloc_pairs" 100000 | figure) "
  runs[pairs_cuaudit]+="$("$bin/cuaudit" --log-file /dev/null "$bin/bench_alloc_pairs" 100000 | figure) "
  runs[churn_native]+="$("$bin/bench_heap_churn" | figure) "
  runs[churn_cuaudit]+="$("$bin/cuaudit" --log-file /dev/null "$bin/bench_heap_churn" | figure) "
done
m() { tr ' ' '\n' <<<"${runs[$1]}" | grep . | median; }
if [[ $only != launch ]]; then
echo "seeds' experiment, 100,000 cudaMalloc(4 KiB)/kernel/cudaFree pairs, median of $reps:"
echo "  native:  $(m pairs_native) us per pair   (runs: ${runs[pairs_native]})"
echo "  cuaudit: $(m pairs_cuaudit) us per pair   (runs: ${runs[pairs_cuaudit]})"
echo "  ratio cuaudit/native: $(ratio "$(m pairs_cuaudit)" "$(m pairs_native)")"
if command -v compute-sanitizer >/dev/null 2>&1; then
  sanitized=$(compute-sanitizer --leak-check full "$bin/bench_alloc_pairs" 100000 | figure)
  echo "  compute-sanitizer --leak-check full (one run): $sanitized us per pair, ratio $(ratio "$sanitized" "$(m pairs_native)")"
fi
echo "host heap churn, 10,000,000 malloc/free pairs with pinned and managed memory live, median of $reps:"
echo "  native:  $(m churn_native) ns per pair   (runs: ${runs[churn_native]})"
echo "  cuaudit: $(m churn_cuaudit) ns per pair   (runs: ${runs[churn_cuaudit]})"
echo "  ratio cuaudit/native: $(ratio "$(m churn_cuaudit)" "$(m churn_native)")"
fi
echo "kernel launches, 200,000 back-to-back launches with four pointer parameters, median of $reps:"
echo "  native:  $(m launch_native) us per launch   (runs: ${runs[launch_native]})"
echo "  cuaudit: $(m launch_cuaudit) us per launch   (runs: ${runs[launch_cuaudit]})"
echo "  cuaudit --check-launch-params no: $(m launch_nocheck) us per launch   (runs: ${runs[launch_nocheck]})"
echo "  ratio cuaudit/native: $(ratio "$(m launch_cuaudit)" "$(m launch_native)")"
echo "  ratio cuaudit without launch checks/native: $(ratio "$(m launch_nocheck)" "$(m launch_native)")"
echo "  what the checks did in one cuaudit run (CUAUDIT_STATS=1):"
CUAUDIT_STATS=1 "$bin/cuaudit" --log-file /dev/null "$bin/bench_launch_rate" 200000 2>&1 | grep 'launch checks' | sed 's/^/    /'
if command -v compute-sanitizer >/dev/null 2>&1; then
  sanitized=$(compute-sanitizer --leak-check full "$bin/bench_launch_rate" 200000 | figure)
  echo "  compute-sanitizer --leak-check full (one run): $sanitized us per launch, ratio $(ratio "$sanitized" "$(m launch_native)")"
fi
