# Probe (hand run on the H200, not a test): which Python line PyTorch's memory snapshot gives the
# blocks of tensors kept from a torch.compile'd model's output (torch_compile_train.py --leak keeps
# `out.detach().clone()`; cuaudit's blocks file showed them at the `compiled(x)` line instead).
# Prints, for the kept tensors, the frames PyTorch recorded for their blocks, and how many
# allocation events in its trace name each line of this file.
# Usage: probe_compile_frames.py [hooks]   (hooks: the settings cuaudit's hooks record with)
import collections
import sys

import torch

if sys.argv[1:] == ["hooks"]:
    torch.cuda.memory._record_memory_history(enabled="all", context="alloc", stacks="python", max_entries=100000)
else:
    torch.cuda.memory._record_memory_history(max_entries=100000)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()
compiled = torch.compile(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(512, 256, device="cuda")
kept = []
for step in range(30):
    optimizer.zero_grad(set_to_none=True)
    out = compiled(x)  # @compiled
    loss = (out - x).pow(2).mean()
    loss.backward()
    optimizer.step()
    kept.append(out.detach().clone())  # @keep
torch.cuda.synchronize()
snapshot = torch.cuda.memory._snapshot()
here = __file__.rsplit("/", 1)[-1]
blocks = {b["address"]: b for s in snapshot["segments"] for b in s["blocks"] if b["state"] == "active_allocated"}


def our_lines(frames):
    return [f["line"] for f in frames or () if f.get("filename", "").endswith(here)]


print("kept tensors' blocks, by the lines of this file in their frames:",
      collections.Counter(tuple(our_lines(blocks.get(t.data_ptr(), {}).get("frames"))) for t in kept))
print("are the kept tensors' data_ptrs block starts:", sum(t.data_ptr() in blocks for t in kept), "of", len(kept))
allocs = [e for trace in snapshot["device_traces"] for e in trace if e["action"] == "alloc"]
print("alloc events by the lines of this file:", collections.Counter(tuple(our_lines(e.get("frames"))) for e in allocs))
kept_addr = {t.data_ptr() for t in kept}
last = {}
for e in allocs:
    if e["addr"] in kept_addr:
        last[e["addr"]] = tuple(our_lines(e.get("frames")))
print("last alloc event at each kept address, by line:", collections.Counter(last.values()))
print("sizes of kept:", {t.untyped_storage().nbytes() for t in kept})
