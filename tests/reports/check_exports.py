#!/usr/bin/env python3
"""--perfetto and --collapsed on the golden runs recorded on the H200: the trace-event file is what
Perfetto and chrome://tracing read (metadata, counters in time order, the peak and out-of-memory
moments as instant events, one slice per allocation from its allocation to its release), and the
collapsed stacks are what flamegraph.pl reads (frames outermost first, bytes last; a Python
program's from the user's line down, growth included)."""
import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from golden_run import finish, report_golden  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--timeline-golden", required=True)
    ap.add_argument("--python-golden", required=True)
    ap.add_argument("--oom-golden", required=True)
    opts = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        trace, collapsed = os.path.join(tmp, "t.json"), os.path.join(tmp, "c.txt")
        _, doc = report_golden(opts.cuaudit, opts.timeline_golden, tmp, "--perfetto", trace, "--collapsed", collapsed)
        events = json.load(open(trace))["traceEvents"]
        counters = [e for e in events if e["ph"] == "C" and e["name"] == "device 0 memory"]
        if len(counters) != len(doc["timeline"]["samples"]):
            failures.append("%d counter events for %d timeline samples" % (len(counters), len(doc["timeline"]["samples"])))
        if [e["ts"] for e in counters] != sorted(e["ts"] for e in counters):
            failures.append("counter events are not in time order")
        if not any(e["ph"] == "M" and e["name"] == "process_name" for e in events):
            failures.append("no process_name metadata")
        peaks = [e for e in events if e["ph"] == "i"]
        if len(peaks) != 1 or "phase_two" not in json.dumps(peaks[0]["args"]):
            failures.append("the peak is not an instant event naming phase_two: %s" % peaks)
        begins = {e["id"]: e for e in events if e["ph"] == "b"}
        ends = {e["id"]: e for e in events if e["ph"] == "e"}
        allocations = doc["processes"][0]["allocations"]
        if len(begins) != allocations or begins.keys() != ends.keys():
            failures.append("%d allocation slices (%d ends) for %d allocations" % (len(begins), len(ends), allocations))
        elif any(ends[i]["ts"] < b["ts"] or "timeline_phases.cu" not in b["args"]["site"] for i, b in begins.items()):
            failures.append("an allocation slice ends before it begins, or does not name its site")
        peak_bytes = max(e["args"]["tracked allocations"] for e in counters)
        if peak_bytes != 3 << 30:
            failures.append("the counters' highest tracked value is %d, expected 3 GiB" % peak_bytes)
        lines = open(collapsed).read().splitlines()
        if lines != ["peak_of_device_0;main;phase_two;cudaMalloc %d" % (3 << 30)]:
            failures.append("collapsed stacks of the timeline run: %s" % lines)

        _, _ = report_golden(opts.cuaudit, opts.golden, tmp, "--collapsed", collapsed)
        lines = open(collapsed).read().splitlines()
        if not all(re.fullmatch(r"[^ ;]+(;[^ ;]+)+ \d+", line) for line in lines):
            failures.append("malformed collapsed lines: %s" % lines)
        if "leaked;main;process_batch;cudaMalloc 327680" not in lines:
            failures.append("the leak of process_batch is not a collapsed stack: %s" % lines)

        # A Python program: the user's line at the root, the native code that allocated below it,
        # the interpreter's frames left out; the growing site and the pool's cache have lines too.
        _, _ = report_golden(opts.cuaudit, opts.python_golden, tmp, "--collapsed", collapsed)
        lines = open(collapsed).read().splitlines()
        growing = [line for line in lines if line.startswith("growing;")]
        if len(growing) != 1 or not growing[0].startswith("growing;cupy_pool.py:16:<module>;") or \
                any(re.search(r";[^;]*(bin/python3[.0-9]*|libpython[^;]*|_PyEval_EvalFrameDefault)[; ]", line)
                    for line in lines):
            failures.append("the CuPy run's collapsed stacks: %s" % [line[:120] for line in lines])
        if not any("reserved_and_not_handed_out;cudaMalloc" in line for line in lines):
            failures.append("the pool's cache at the peak is not named: %s" % [line[:120] for line in lines])

        # Perfetto marks the moment an allocation failed for lack of memory.
        report_golden(opts.cuaudit, opts.oom_golden, tmp, "--perfetto", trace)
        instants = [e for e in json.load(open(trace))["traceEvents"] if e["ph"] == "i"]
        if not any(e["name"].startswith("out of memory") and "verdict" in e["args"] for e in instants):
            failures.append("no out-of-memory instant event: %s" % [e["name"] for e in instants])
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
