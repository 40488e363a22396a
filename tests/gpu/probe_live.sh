#!/usr/bin/env bash
# Probe: the PyTorch hook's periodic writes under cuaudit (stderr and the run directory).
rm -rf /tmp/k1
CUAUDIT_FRAMEWORK_WRITE_MS=1000 timeout 60 .gpu/bin/cuaudit --save /tmp/k1 -- python3 tests/gpu/torch_long_job.py > /tmp/k1.out 2>&1 &
launcher=$!
sleep 15
ls -la /tmp/k1
kill -INT $(pgrep -P "$(pgrep -P $launcher)")
sleep 8
tail -40 /tmp/k1.out
ls -la /tmp/k1
