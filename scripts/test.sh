#!/usr/bin/env bash
# Installs, builds and runs the tests: unit, golden and CLI tests everywhere; the CUDA test
# programs (ctest label gpu) too where a GPU is present. Without a GPU they are not run, and
# this says so: a skipped GPU test is not a passing one. Then the tool and its tests again under
# AddressSanitizer and UndefinedBehaviorSanitizer (CUAUDIT_SANITIZE; the injected libraries are
# never sanitized: they run inside the user's process), after a short run of each fuzzing harness
# and a tool-only build that has no CUDA toolkit in reach.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/check-format.sh
scripts/build.sh build
# Tests run as many at once as the machine has cores: most are processes that wait on files and
# children, and the 2-core CI machine otherwise spends minutes running them one by one.
jobs=$(nproc)
(
  cd build
  if nvidia-smi -L >/dev/null 2>&1; then
    ctest --output-on-failure  # one at a time: the CUDA programs share the GPU
  else
    echo "note: no GPU here; the CUDA test programs (ctest -L gpu) are not run: scripts/run-gpu-tests.sh runs them on a GPU machine"
    ctest --output-on-failure -j"$jobs" -LE gpu
  fi
)
echo "== a tool-only build (CUAUDIT_TOOL_ONLY): report, merge and diff with no CUDA toolkit in reach"
# -O1 without debug information: this build proves the tool builds and reads runs without CUDA;
# its speed and stacks are the main build's business, and CI's time is the limit (docs/TESTING.md).
PATH=/usr/bin:/bin cmake -S . -B build-tool -G Ninja -DCUAUDIT_TOOL_ONLY=ON -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" >/dev/null
PATH=/usr/bin:/bin cmake --build build-tool --target cuaudit bench_make_trace
(cd build-tool && ctest --output-on-failure -j"$jobs" -R '^(golden|cli)\.')
echo "== fuzzing: every harness for 2000 inputs under ASan and UBSan (scripts/fuzz.sh)"
scripts/fuzz.sh 2000
echo "== the tool and its tests under ASan and UBSan, in the fuzzing build (build-san: one clang build for both)"
cmake --build build-san --target cuaudit cuaudit-injection cuaudit-preload cuaudit_unit_tests html_fixture bench_make_trace
cd build-san
# Leak detection is off: the tool ends with std::exit on errors (no unwinding) and the static
# libstdc++'s emergency pools are reported as leaks; memory errors and undefined behaviour are what
# this stage is for.
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j"$jobs" -R '^(unit|golden|cli|contract)\.'
