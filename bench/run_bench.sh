#!/usr/bin/env bash
# Runs the seeds' allocate/use/free experiment natively, under cuaudit, and (where installed)
# under compute-sanitizer --leak-check full, and prints the ratios from this one run.
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
