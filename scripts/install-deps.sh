#!/usr/bin/env bash
# Installs what building and testing cuaudit needs on Debian 12, from Debian's packages (clang for
# the libFuzzer harnesses). --build-only: only what building the tool needs (scripts/demo.sh).
# The CUDA toolkit (nvcc, CUPTI) is NVIDIA's, not Debian's: it must already be in /usr/local/cuda.
set -euo pipefail
# First, before installing anything: the one dependency that cannot come from Debian.
if [ ! -f /usr/local/cuda/include/cupti.h ] && ! command -v nvcc >/dev/null 2>&1; then
  echo "error: the CUDA toolkit (with CUPTI) is not installed in /usr/local/cuda; install CUDA 13 from NVIDIA first" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
build_only=false
[ "${1:-}" = "--build-only" ] && build_only=true
packages=(cmake ninja-build g++ python3 libboost-stacktrace-dev nlohmann-json3-dev libcli11-dev libfmt-dev libcapstone-dev libdw-dev libexpat1-dev
  libprotobuf-dev protobuf-compiler libdebuginfod-dev)
# valgrind: callgrind counts the CPU benchmark's instructions (bench/cpu/run_cpu_bench.sh); prometheus (and
# its promtool): the metrics test scrapes cuaudit --metrics with a real server (tests/metrics/);
# libxml2-utils: xmllint validates the JUnit files against Jenkins' schema; golang-go: `go tool pprof`
# reads the --pprof profiles (tests/reports/check_pprof.py); debuginfod and libc6-dbg: separate debug
# files from a real server and from a distribution's debug package (tests/symbols/check_debug_files.py);
# lintian: the .deb's check (tests/package/check_package.py).
$build_only || packages+=(clang clang-format doctest-dev python3-pytest valgrind prometheus libxml2-utils golang-go
  debuginfod libc6-dbg lintian)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The SARIF test validates against the official schema with node (npm fetches the validator); the
# HTML report is tested in Debian's Chromium.
if ! $build_only && ! dpkg -s chromium >/dev/null 2>&1; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
if ! $build_only && ! command -v npm >/dev/null 2>&1; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null
fi
