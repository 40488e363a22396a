#!/usr/bin/env bash
# Runs each benchmark natively and under cuaudit (and the seeds' experiment under
# compute-sanitizer --leak-check full, where installed), alternating the configurations REPS times
# (default 5) so that drift on the machine hits them alike, and prints the median of each and the
# ratios of the medians. Usage: bench/run_bench.sh BUILD_DIR [REPS]
set -euo pipefail
build=${1:?usage: bench/run_bench.sh BUILD_DIR [REPS]}
reps=${2:-5}
bin="$build/bin"
figure() { grep -o '[0-9.]* [nu]s per pair' | cut -d' ' -f1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

declare -A runs
for ((i = 0; i < reps; i++)); do
  runs[pairs_native]+="$("$bin/bench_alloc_pairs" 100000 | figure) "
  runs[pairs_cuaudit]+="$("$bin/cuaudit" --log-file /dev/null "$bin/bench_alloc_pairs" 100000 | figure) "
  runs[churn_native]+="$("$bin/bench_heap_churn" | figure) "
  runs[churn_cuaudit]+="$("$bin/cuaudit" --log-file /dev/null "$bin/bench_heap_churn" | figure) "
done
m() { tr ' ' '\n' <<<"${runs[$1]}" | grep . | median; }
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
