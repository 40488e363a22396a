#!/usr/bin/env bash
# On the GPU machine, what issue 53's exports need a device for, kept as fixtures afterwards:
# compute-sanitizer's XML records of four test programs (for `cuaudit suppressions import`, and
# whether compute-sanitizer itself accepts each file back as --suppressions); cuaudit --memory-viz and
# --pprof on a PyTorch training loop; a real torch.cuda.memory._dump_snapshot() (the format's own
# fixture); and PyTorch's reader (python -m torch.cuda._memory_viz stats, trace, trace_plot,
# segment_plot) on cuaudit's snapshots of that run and of the golden runs.
# Usage (from the repository root, after scripts/bundle-for-gpu.sh and tar -xzf .gpu/bin.tar.gz -C .gpu):
#   scripts/gpu-collect-exports.sh BIN_DIR OUT_DIR
set -uo pipefail
bin=${1:?usage: scripts/gpu-collect-exports.sh BIN_DIR OUT_DIR}
out=${2:?usage: scripts/gpu-collect-exports.sh BIN_DIR OUT_DIR}
mkdir -p "$out/cs" "$out/viz"
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
echo "compute-sanitizer: $cs $("$cs" --version | tail -1)"
for p in demo_leaks gpu_unchecked_errors_O2 gpu_launch_misaligned_float4 gpu_invalid_free; do
  timeout 90 "$cs" --tool memcheck --leak-check full --xml yes --save "$out/cs/$p.xml" "$bin/$p" >"$out/cs/$p.out" 2>&1
  echo "$p: rc $?, $(wc -c <"$out/cs/$p.xml" 2>/dev/null) bytes of XML"
  timeout 90 "$cs" --tool memcheck --leak-check full --suppressions "$out/cs/$p.xml" "$bin/$p" \
    >"$out/cs/$p.suppressed.out" 2>&1
  echo "  given back as --suppressions: rc $?, $(grep 'ERROR SUMMARY' "$out/cs/$p.suppressed.out")"
  "$bin/cuaudit" suppressions import "$out/cs/$p.xml" >"$out/cs/$p.supp" 2>"$out/cs/$p.import.err"
  echo "  cuaudit suppressions import: rc $?, $(grep -c '^{' "$out/cs/$p.supp") block(s)"
done
timeout 300 "$bin/cuaudit" --memory-viz "$out/viz/torch-growth.pickle" --pprof "$out/viz/torch-growth.pb.gz" -q -- \
  python3 tests/gpu/torch_growth.py --keep >"$out/viz/torch-growth.log" 2>&1
echo "cuaudit on torch_growth.py --keep: rc $?"
OUT_VIZ="$out/viz" python3 - >"$out/viz/real-snapshot.log" 2>&1 <<'PY'
import os, pickle, torch
out = os.environ["OUT_VIZ"]
torch.cuda.memory._record_memory_history(max_entries=100000)
x = [torch.randn(1024, 1024, device="cuda") for _ in range(4)]
del x[1]
y = torch.empty(30 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.memory._dump_snapshot(out + "/torch-real.pickle")
s = pickle.load(open(out + "/torch-real.pickle", "rb"))
print("torch", torch.__version__, "keys", sorted(s))
print("segment keys", sorted(s["segments"][0]))
print("block keys", sorted(s["segments"][0]["blocks"][0]))
print("entry keys", sorted(s["device_traces"][0][0]))
PY
echo "a real PyTorch snapshot: rc $?"
for golden in demo-run torch-fragmentation-run cupy-fragmentation-run; do
  "$bin/cuaudit" report "tests/golden/$golden" --memory-viz "$out/viz/$golden.pickle" -q >/dev/null 2>&1
done
for f in "$out"/viz/*.pickle; do
  n=$(basename "$f" .pickle)
  for c in stats trace; do
    timeout 60 python3 -m torch.cuda._memory_viz $c "$f" >"$out/viz/$n.$c.txt" 2>&1
    echo "$n: torch.cuda._memory_viz $c rc $?"
  done
  for c in trace_plot segment_plot; do
    timeout 60 python3 -m torch.cuda._memory_viz $c "$f" -o "$out/viz/$n.$c.html" >"$out/viz/$n.$c.log" 2>&1
    echo "$n: torch.cuda._memory_viz $c rc $?"
  done
done
