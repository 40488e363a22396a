#!/usr/bin/env bash
# Configures build-san: clang, the tool's libraries under ASan and UBSan with libFuzzer's coverage
# (CUAUDIT_FUZZ). One build serves scripts/fuzz.sh (the harnesses) and scripts/test.sh (the unit,
# golden, CLI and contract tests under the sanitizers), so CI compiles the tool once for the two.
# -O1 with line tables, as libFuzzer's documentation builds harnesses: a report's stack keeps its
# lines, at a third of -O2 -g's compile time under the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
CC=clang CXX=clang++ cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUAUDIT_FUZZ=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" >/dev/null
