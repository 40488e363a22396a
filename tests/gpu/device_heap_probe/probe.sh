#!/usr/bin/env bash
# Builds and runs the device-heap probe (issue 33) on the GPU machine, where the Sanitizer API's
# headers and library ship with the toolkit's compute-sanitizer. Each mode alone, then two under
# cuaudit (its CUPTI subscriber after and before the Sanitizer API's), then compute-sanitizer's own
# device-heap leak report of the same kernels, for comparison.
# Usage: [PROBE_MODES="mode..."] tests/gpu/device_heap_probe/probe.sh CUAUDIT_BIN_DIR OUT_DIR
#   (PROBE_MODES: only those modes of the probe alone, nothing under cuaudit or compute-sanitizer)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: probe.sh CUAUDIT_BIN_DIR OUT_DIR}
out=${2:?usage: probe.sh CUAUDIT_BIN_DIR OUT_DIR}
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
export PATH="$PATH:$cuda/bin"
header=$(find "$cuda/" "$(dirname "$(readlink -f "$(command -v compute-sanitizer)")")/.." -name sanitizer_patching.h 2>/dev/null | head -1)
san=$(dirname "$(dirname "$header")")  # the folder with include/ and libsanitizer-public.so
echo "compute-sanitizer in $san: $(ls "$san" | tr '\n' ' ' | cut -c1-300)"
nvcc -arch=sm_90 --fatbin --compile-as-tools-patch -I"$san/include" -o "$out/probe_patches.fatbin" \
  "$here/probe_patches.cu" || exit 1
nvcc -arch=sm_90 -lineinfo -I"$san/include" -o "$out/probe" "$here/probe.cu" "$here/probe_cupti.cpp" -L"$san" -L"$cuda/extras/CUPTI/lib64" \
  -lsanitizer-public -lcupti -lcuda -Xlinker -rpath="$san" || exit 1
for mode in ${PROBE_MODES:-none sanitizer-only cupti-first sanitizer-first sanitizer-late}; do
  echo "== $mode"
  timeout 60 "$out/probe" "$mode" "$out/probe_patches.fatbin" 2>&1
  echo "exit $?"
done
[[ -n ${PROBE_MODES:-} ]] && exit 0
for mode in sanitizer-only sanitizer-late; do
  echo "== $mode under cuaudit"
  timeout 120 "$bin/cuaudit" --json "$out/probe-cuaudit-$mode.json" -- "$out/probe" "$mode" "$out/probe_patches.fatbin" 2>&1 |
    grep -v '^    #' | head -40
  echo "exit ${PIPESTATUS[0]}"
done
echo "== compute-sanitizer --leak-check full, the kernels alone"
timeout 120 compute-sanitizer --leak-check full "$out/probe" none >"$out/compute-sanitizer.txt" 2>&1
echo "exit $?; $(grep -c 'on the device heap' "$out/compute-sanitizer.txt") 'on the device heap' lines; the first:"
grep -m 3 -A 3 'device heap' "$out/compute-sanitizer.txt"
tail -n 4 "$out/compute-sanitizer.txt"
