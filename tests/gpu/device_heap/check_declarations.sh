#!/usr/bin/env bash
# On the GPU machine: compiles check_declarations.cpp against compute-sanitizer's own headers, so a
# number or field of injection/sanitizer_api.h that differs from the toolkit's fails here.
# Usage: tests/gpu/device_heap/check_declarations.sh OUT_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: check_declarations.sh OUT_DIR}
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
header=$(find "$cuda/" "$(dirname "$(readlink -f "$(command -v compute-sanitizer)")")/.." -name sanitizer_callbacks.h 2>/dev/null | head -1)
[[ -n $header ]] || { echo "FAIL: no sanitizer_callbacks.h in $cuda or beside compute-sanitizer"; exit 1; }
g++ -std=c++17 -Wno-enum-compare -I"$(dirname "$header")" -I"$cuda/include" -I"$here/../../../injection" \
  -o "$out/check_declarations" "$here/check_declarations.cpp" && "$out/check_declarations"
