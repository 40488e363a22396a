#!/usr/bin/env bash
# Builds only what the demo needs and runs cuaudit on the bundled demo program, writing
# demo-report.json and demo-report.html. With a GPU the demo runs under cuaudit; without one,
# `cuaudit report` reads the run recorded from the same demo on an H200 (only the tool is built:
# no test programs, no browser, no Node).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build-only
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build-demo -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUAUDIT_BUILD_TESTS=OFF >/dev/null
outputs=(--json demo-report.json --html demo-report.html --path-map "/work/main=$PWD")
if nvidia-smi -L >/dev/null 2>&1; then
  cmake --build build-demo --target cuaudit cuaudit-injection cuaudit-preload demo_leaks
  echo "== cuaudit build-demo/bin/demo_leaks"
  build-demo/bin/cuaudit "${outputs[@]}" build-demo/bin/demo_leaks
else
  cmake --build build-demo --target cuaudit
  echo "== no GPU here: cuaudit report on the run recorded from demo_leaks on an H200"
  run=$(mktemp -d)/demo-run
  cp -r tests/golden/demo-run "$run"
  build-demo/bin/cuaudit report "$run" "${outputs[@]}"
fi
echo "== reports written to demo-report.json and demo-report.html (open it in a browser)"
