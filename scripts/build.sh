#!/usr/bin/env bash
# Configures and builds cuaudit, its tests and the demo into BUILD_DIR (default: build).
set -euo pipefail
build=${1:-build}
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S "$(dirname "$0")/.." -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build"
