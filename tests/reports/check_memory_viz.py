#!/usr/bin/env python3
"""--memory-viz against the format PyTorch's memory visualizer reads (torch.cuda.memory._snapshot()'s,
as torch/utils/viz/MemoryViz.js and torch/cuda/_memory_viz.py read it): a pickle of protocol 4 at most
(the viewer shows nothing for 5) made only of opcodes MemoryViz.js's own unpickler knows; segments with
device, address and sizes, tiled by blocks in address order; trace entries whose frees follow their
allocations; frames with filename, line and name. On the golden native run every leak is an
active block at its line; on the golden PyTorch fragmentation run the caching allocator's segment holds
the program's blocks with the free gaps between them, as the viewer draws fragmentation."""
import argparse
import os
import pickle
import pickletools
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from golden_run import finish, report_golden  # noqa: E402

# The opcodes MemoryViz.js's unpickler handles (its `switch`), by pickletools' names.
VIEWER_OPCODES = {"APPENDS", "BINGET", "BININT", "BININT1", "BININT2", "EMPTY_DICT", "EMPTY_LIST", "FRAME", "LONG1",
                  "LONG_BINGET", "MARK", "MEMOIZE", "PROTO", "SETITEMS", "SHORT_BINUNICODE", "STOP", "TUPLE2",
                  "APPEND", "NEWFALSE", "BINPUT", "BINUNICODE", "EMPTY_TUPLE", "NEWTRUE", "NONE", "BINFLOAT"}
SEGMENT_KEYS = {"device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
                "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"}
ACTIONS = {"segment_alloc", "alloc", "free_requested", "free_completed", "segment_free"}


def check_snapshot(path, failures):
    data = open(path, "rb").read()
    ops = [op.name for op, _, _ in pickletools.genops(data)]
    if data[:2] != b"\x80\x04" or set(ops) - VIEWER_OPCODES:
        failures.append("%s: protocol %d, opcodes the viewer cannot read: %s" %
                        (path, data[1], sorted(set(ops) - VIEWER_OPCODES)))
    snap = pickle.loads(data)
    for seg in snap["segments"]:
        if set(seg) != SEGMENT_KEYS:
            failures.append("segment keys %s" % sorted(set(seg) ^ SEGMENT_KEYS))
            break
        at = seg["address"]
        for b in seg["blocks"]:
            if b["address"] != at or b["state"] not in ("active_allocated", "inactive"):
                failures.append("blocks do not tile segment %#x: %s" % (seg["address"], b))
                break
            at += b["size"]
        if at != seg["address"] + seg["total_size"]:
            failures.append("segment %#x: blocks end at %#x" % (seg["address"], at))
        if seg["allocated_size"] != sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated"):
            failures.append("segment %#x: allocated_size is not its active blocks'" % seg["address"])
    for device, entries in enumerate(snap["device_traces"]):
        live, times = set(), [e["time_us"] for e in entries]
        if times != sorted(times):
            failures.append("device %d: trace not in time order" % device)
        for e in entries:
            if e["action"] not in ACTIONS or any(set(f) != {"filename", "line", "name"} for f in e["frames"]):
                failures.append("entry %s" % e)
                break
            if e["action"] == "alloc":
                live.add(e["addr"])
            elif e["action"] == "free_completed" and e["addr"] not in live:
                failures.append("device %d: free_completed of %#x before its alloc" % (device, e["addr"]))
            elif e["action"] == "free_completed":
                live.discard(e["addr"])
    return snap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--torch-golden", required=True)
    opts = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "native.pickle")
        _, doc = report_golden(opts.cuaudit, opts.golden, tmp, "--memory-viz", path)
        snap = check_snapshot(path, failures)
        active = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
        device_leaks = [f for f in doc["findings"] if f["kind"] == "leak" and f["api"] == "cudaMalloc"]
        if sum(b["size"] for b in active) != sum(f["bytes"] for f in device_leaks):
            failures.append("active blocks hold %d bytes, the report's device leaks %d" %
                            (sum(b["size"] for b in active), sum(f["bytes"] for f in device_leaks)))
        if not all(b["frames"] and b["frames"][0]["name"] in ("process_batch", "upload") for b in active):
            failures.append("a leaked block without its allocating function: %s" % active[:2])

        path = os.path.join(tmp, "torch.pickle")
        report_golden(opts.cuaudit, opts.torch_golden, tmp, "--memory-viz", path)
        snap = check_snapshot(path, failures)
        states = [b["state"] for s in snap["segments"] for b in s["blocks"]]
        if states.count("active_allocated") < 2 or "inactive" not in states[:-1]:
            failures.append("PyTorch's segment is not the program's blocks with free gaps between: %s" % states)
        python_lines = {f["filename"].rsplit("/", 1)[-1] for s in snap["segments"] for b in s["blocks"]
                        for f in b["frames"]}
        if "torch_fragmentation.py" not in python_lines:
            failures.append("no block names the user's Python file: %s" % sorted(python_lines)[:10])
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
