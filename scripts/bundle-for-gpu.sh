#!/usr/bin/env bash
# Packs what the GPU test machine needs (binaries only, debug info of cuaudit itself stripped)
# into .gpu/bin.tar.gz, which `run` carries there. The test programs keep their debug info (the
# reports name file:line from it) and link the CUDA runtime statically, about 1 MB each: packed,
# they stay well inside what `run` carries (64 MiB). The machine has no Debian packages and the
# checkout lands at another path, so everything it runs is relative to the repository root.
# Usage: scripts/bundle-for-gpu.sh [BUILD_DIR]; there: tar -xzf .gpu/bin.tar.gz -C .gpu
set -euo pipefail
build=${1:-build}
rm -rf .gpu && mkdir -p .gpu/bin
for f in "$build"/bin/*; do
  case "$(basename "$f")" in
    cuaudit) strip --strip-debug -o .gpu/bin/cuaudit "$f" ;;
    libbench_* | libstand_in_* | libdebug_file_*) ;;  # stand-ins for the CPU tests and benchmarks (one is named as libcuda.so.1): never there
    lib*.so | *.fatbin | gpu_* | demo_* | bench_* | probe_* | service_*) cp "$f" .gpu/bin/ ;;
    cuaudit_site) cp -r "$f" .gpu/bin/ ;;  # the Python hooks, found beside the injection library
    *) ;;  # unit and self tests run here, not there
  esac
done
tar -C .gpu -czf .gpu/bin.tar.gz bin
rm -rf .gpu/bin
du -sh .gpu/bin.tar.gz
