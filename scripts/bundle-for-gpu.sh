#!/usr/bin/env bash
# Copies what the GPU test machine needs (binaries only, debug info of cuaudit itself stripped)
# into .gpu/, which `run` carries there. The machine has no Debian packages and the checkout
# lands at another path, so everything it runs is relative to the repository root.
# Usage: scripts/bundle-for-gpu.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
rm -rf .gpu && mkdir -p .gpu/bin
for f in "$build"/bin/*; do
  case "$(basename "$f")" in
    cuaudit) strip --strip-debug -o .gpu/bin/cuaudit "$f" ;;
    lib*.so | gpu_* | demo_* | bench_* | probe_*) cp "$f" .gpu/bin/ ;;
    *) ;;  # unit and self tests run here, not there
  esac
done
du -sh .gpu
