"""How long the PyTorch hook takes to write its blocks file with a full memory history (the cost of
each write while the program runs). Prints median and spread of 5 writes per history size."""
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else ".gpu/bin/cuaudit_site")  # the built hooks
import torch  # noqa: E402

import cuaudit_hooks_torch  # noqa: E402

directory = tempfile.mkdtemp()
os.environ["CUAUDIT_TRACE_DIR"] = directory
for entries in (1000, 10000, 100000):
    torch.cuda.memory._record_memory_history(enabled=None)
    torch.cuda.memory._record_memory_history(enabled="all", context="alloc", stacks="python", max_entries=entries)
    kept = [torch.empty(1024, device="cuda") for _ in range(200)]
    for step in range(entries):
        t = torch.empty(4096 + step % 64, device="cuda")
        del t
    times = []
    for _ in range(5):
        start = time.perf_counter()
        cuaudit_hooks_torch._write_torch_blocks(torch, entries)
        times.append(time.perf_counter() - start)
    size = os.path.getsize([os.path.join(directory, f) for f in os.listdir(directory) if f.startswith("torch-blocks")][0])
    print("entries %6d: write median %.3f s (min %.3f, max %.3f), file %.1f MB" %
          (entries, statistics.median(times), min(times), max(times), size / 1e6))
    del kept
