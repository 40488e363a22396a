#!/usr/bin/env bash
# On the GPU machine, what --device-heap and managed memory need checked there (issue 55, step 2):
# the declarations against the real headers, the device-heap kernels under cuaudit (kept as golden
# runs) beside compute-sanitizer's leak check of the same binary, the managed ping-pong loop and
# its prefetched twin and CuPy's pool over managed memory under the default mode (kept as golden runs too).
# Usage: tests/gpu/device_heap/run_on_gpu.sh BIN_DIR OUT_DIR
set -uo pipefail
bin=${1:?usage: run_on_gpu.sh BIN_DIR OUT_DIR}
out=${2:?usage: run_on_gpu.sh BIN_DIR OUT_DIR}
mkdir -p "$out"
echo "== the Sanitizer API's numbers and layouts"
tests/gpu/device_heap/check_declarations.sh "$out/declarations"
echo "== device-heap kernels under cuaudit --device-heap"
timeout 120 python3 tests/gpu/check_findings.py --cuaudit "$bin/cuaudit" --program "$bin/gpu_device_heap_kernels" \
  --source tests/gpu/device_heap_kernels.cu --keep-run "$out/device-heap-run" 2>&1 | tail -20
timeout 120 "$bin/cuaudit" --device-heap --json "$out/device-heap.json" -- "$bin/gpu_device_heap_kernels" >"$out/device-heap.txt" 2>&1
echo "exit $?"; grep -v '^==[0-9]*==     #[2-9]' "$out/device-heap.txt" | head -40
echo "== the same binary under compute-sanitizer --leak-check full"
timeout 120 compute-sanitizer --leak-check full "$bin/gpu_device_heap_kernels" >"$out/compute-sanitizer.txt" 2>&1
echo "exit $?; $(grep -c 'on the device heap' "$out/compute-sanitizer.txt") 'on the device heap' lines; the first:"
grep -m 2 -A 3 'device heap' "$out/compute-sanitizer.txt"
grep -iE 'double|invalid|free' "$out/compute-sanitizer.txt" | head -5
tail -n 4 "$out/compute-sanitizer.txt"
for p in managed_ping_pong managed_prefetched; do
  echo "== $p (default mode)"
  timeout 120 python3 tests/gpu/check_findings.py --cuaudit "$bin/cuaudit" --program "$bin/gpu_$p" \
    --source "tests/gpu/$p.cu" --keep-run "$out/${p//_/-}-run" 2>&1 | tail -12
done
if python3 -c "import cupy" 2>/dev/null; then
  echo "== CuPy's pool over managed memory: its kernels named (golden.cupy-managed)"
  timeout 120 "$bin/cuaudit" --save "$out/cupy-managed-run" -- python3 tests/gpu/cupy_managed.py >"$out/cupy-managed.txt" 2>&1
  echo "exit $?"; grep -E 'Managed memory|kernels whose' "$out/cupy-managed.txt"
fi
# What comes back from the machine is limited in files: the managed runs without their kernel code
# (their checks never read it), the device-heap run with its patched cubins (its calls' source
# lines come from their line tables), packed into one file.
rm -rf "$out"/*managed-*-run/kernel-code
(cd "$out" && tar -czf golden-runs.tar.gz ./*-run && rm -rf ./*-run)
