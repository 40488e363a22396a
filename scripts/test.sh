#!/usr/bin/env bash
# Installs, builds and runs the tests: unit, golden and CLI tests everywhere; the CUDA test
# programs (ctest label gpu) too where a GPU is present. Without a GPU they are not run, and
# this says so: a skipped GPU test is not a passing one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
cd build
if nvidia-smi -L >/dev/null 2>&1; then
  ctest --output-on-failure
else
  echo "note: no GPU here; the CUDA test programs (ctest -L gpu) are not run: scripts/run-gpu-tests.sh runs them on a GPU machine"
  ctest --output-on-failure -LE gpu
fi
