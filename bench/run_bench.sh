#!/usr/bin/env bash
# Runs the seeds' allocate/use/free experiment natively, under cuaudit, and (where installed)
# under compute-sanitizer --leak-check full, then the host heap churn natively and under cuaudit
# (the cost of checking free() against CUDA host memory), and prints the ratios from this run.
# Usage: bench/run_bench.sh BUILD_DIR [PAIRS]
set -euo pipefail
build=${1:?usage: bench/run_bench.sh BUILD_DIR [PAIRS]}
pairs=${2:-100000}
bin="$build/bin"
per_pair() { grep -o '[0-9.]* us per pair' | cut -d' ' -f1; }
native=$("$bin/bench_alloc_pairs" "$pairs" | per_pair)
audited=$("$bin/cuaudit" --log-file /dev/null "$bin/bench_alloc_pairs" "$pairs" | per_pair)
echo "native:      $native us per pair"
echo "cuaudit:     $audited us per pair"
awk -v a="$audited" -v n="$native" 'BEGIN { printf "ratio cuaudit/native: %.3f\n", a / n }'
if command -v compute-sanitizer >/dev/null 2>&1; then
  sanitized=$(compute-sanitizer --leak-check full "$bin/bench_alloc_pairs" "$pairs" | per_pair)
  echo "compute-sanitizer --leak-check full: $sanitized us per pair"
  awk -v s="$sanitized" -v n="$native" 'BEGIN { printf "ratio compute-sanitizer/native: %.3f\n", s / n }'
fi

churn_native=$("$bin/bench_heap_churn" | grep -o '[0-9.]* ns per pair' | cut -d' ' -f1)
churn_audited=$("$bin/cuaudit" --log-file /dev/null "$bin/bench_heap_churn" | grep -o '[0-9.]* ns per pair' | cut -d' ' -f1)
echo "heap churn native:  $churn_native ns per malloc/free pair"
echo "heap churn cuaudit: $churn_audited ns per malloc/free pair (every free checked against live pinned/managed memory)"
awk -v a="$churn_audited" -v n="$churn_native" 'BEGIN { printf "ratio heap churn cuaudit/native: %.3f\n", a / n }'
