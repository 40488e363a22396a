#!/usr/bin/env bash
# Packs what the GPU test machine needs (binaries only, debug info of cuaudit itself stripped)
# into .gpu/bin.tar.gz, which `run` carries there. The test programs keep their debug info (the
# reports name file:line from it) and link the CUDA runtime statically, about 1 MB each: packed,
# they stay well inside what `run` carries (64 MiB). The machine has no Debian packages and the
# checkout lands at another path, so everything it runs is relative to the repository root.
# Usage: scripts/bundle-for-gpu.sh [BUILD_DIR]; there: tar -xzf .gpu/bin.tar.gz -C .gpu (bin/, lib/cuaudit/)
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
# elfutils' shared libraries, where cuaudit's run path ($ORIGIN/../lib/cuaudit) finds them, as in
# the .tar.gz package: the GPU machines have no libdw1 or libelf1.
mkdir -p .gpu/lib/cuaudit
for lib in libdw.so.1 libelf.so.1; do
  cp -L "$(ldd "$build/bin/cuaudit" | awk -v l="$lib" '$1 == l { print $3 }')" .gpu/lib/cuaudit/$lib
done
tar -C .gpu -czf .gpu/bin.tar.gz bin lib
rm -rf .gpu/bin .gpu/lib
du -sh .gpu/bin.tar.gz
