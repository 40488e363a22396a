#!/usr/bin/env bash
# On the GPU machine, watch mode (issue 55, step 3): the CUDA service under `--mode watch --metrics`
# with the default sampling (its 1 MiB responses at the exact threshold: every stack walked) and
# with a sampling mean of 4 MiB (each response's stack walked with p = 1 - exp(-1/4)); then a
# PyTorch job that keeps a 4 MiB tensor a step, stopped with SIGTERM after the scrapes. The growing
# site must rise at its line from scrape to scrape and the final report say it came from sampled stacks.
# Each run is saved (watch-runs.tar.gz) to be kept as a golden.
# Usage: tests/gpu/run_watch_on_gpu.sh BIN_DIR OUT_DIR
set -uo pipefail
bin=${1:?usage: run_watch_on_gpu.sh BIN_DIR OUT_DIR}
out=${2:?usage: run_watch_on_gpu.sh BIN_DIR OUT_DIR}
mkdir -p "$out"
status=0
run() { timeout 150 python3 tests/gpu/check_metrics_gpu.py --cuaudit "$bin/cuaudit" "$@" || status=1; }
echo "== the service, --mode watch, default sampling"
rm -rf "$out"/watch-*-run
run --source tests/gpu/service_requests.cu --marker grows --keep "$out/watch-default" --cuaudit-arg=--mode=watch \
  --cuaudit-arg=--save="$out/watch-default-run" \
  --expect-in-report 'watch mode' --expect-in-report '.*service_requests\.cu:41.*' -- "$bin/service_requests" 16
echo "== the service, --mode watch --stack-sample-bytes 4M --stack-exact-bytes 64M (the responses sampled)"
run --source tests/gpu/service_requests.cu --marker grows --keep "$out/watch-sampled" --cuaudit-arg=--mode=watch \
  --cuaudit-arg=--stack-sample-bytes=4M --cuaudit-arg=--stack-exact-bytes=64M --expect-in-report '.*stand for.*' \
  --cuaudit-arg=--save="$out/watch-sampled-run" \
  -- "$bin/service_requests" 16
echo "== a PyTorch job, --mode watch, stopped with SIGTERM after the scrapes"
run --source tests/gpu/torch_long_job.py --marker keep --keep "$out/watch-torch" --cuaudit-arg=--mode=watch \
  --cuaudit-arg=--save="$out/watch-torch-run" --stop-after --expect-in-report 'watch mode' \
  -- python3 tests/gpu/torch_long_job.py
# The runs come back as one file (goldens for tests/golden: watch mode as the GPU recorded it).
(cd "$out" && tar -czf watch-runs.tar.gz watch-*-run && rm -rf watch-*-run)
for d in "$out"/watch-default "$out"/watch-sampled "$out"/watch-torch; do
  echo "-- $(basename "$d"): the report's findings"
  grep -E '^(ERROR|WARNING|error|warning)|stand for|sampled|SUMMARY' "$d/report.txt" | head -12
done
exit $status
