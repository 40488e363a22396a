#!/usr/bin/env bash
# Installs, builds and runs cuaudit on the bundled demo program. With a GPU the demo runs under
# cuaudit; without one, `cuaudit report` reads the run recorded from the same demo on an H200.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
if nvidia-smi -L >/dev/null 2>&1; then
  echo "== cuaudit build/bin/demo_leaks"
  build/bin/cuaudit --json demo-report.json build/bin/demo_leaks
else
  echo "== no GPU here: cuaudit report on the run recorded from build/bin/demo_leaks on an H200"
  run=$(mktemp -d)/demo-run
  cp -r tests/golden/demo-run "$run"
  build/bin/cuaudit report "$run" --json demo-report.json
fi
echo "== JSON report written to demo-report.json"
