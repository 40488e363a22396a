#!/usr/bin/env python3
"""Growth on PyTorch runs recorded on the H200 (tests/gpu/torch_growth.py under cuaudit), replayed
anywhere: with PyTorch's cache off the list's growth is at the script's @features line; with the
cache on and no list nothing gates; with the cache on and the list, the growth is found at the same
line, from PyTorch's blocks (the runs hold the torch-blocks file cuaudit's Python hooks wrote)."""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from golden_run import finish, report_golden  # noqa: E402
import tempfile  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--runs", required=True, help="tests/golden/torch-growth")
    ap.add_argument("--script", required=True, help="tests/gpu/torch_growth.py")
    opts = ap.parse_args()
    line = next(n for n, text in enumerate(open(opts.script), start=1) if re.search(r"#\s*@features\s*$", text))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        def judge(name):
            proc, doc = report_golden(opts.cuaudit, os.path.join(opts.runs, name), tmp, "--error-exitcode", "9")
            growth = [f for f in doc["findings"] if f["kind"] == "growth"]
            errors = [f for f in doc["findings"] if f["severity"] == "error" and not f["suppressed"]]
            return proc.returncode, growth, errors, doc

        status, growth, errors, _ = judge("list-cache-off")
        top = growth[0]["stack"][0] if len(growth) == 1 and growth[0]["stack"] else {}
        if status != 9 or len(growth) != 1 or not (top.get("file") or "").endswith("torch_growth.py") or top.get("line") != line:
            failures.append("cache off, list: expected one growth at torch_growth.py:%d, exit 9 (got exit %d, %s)"
                            % (line, status, [(f["stack"][0].get("file"), f["stack"][0].get("line")) for f in growth]))
        status, growth, errors, doc = judge("plain-cache-on")
        named = [f for f in doc["findings"] if f["kind"] == "held_by_allocator"
                 and any("torch_growth.py" in n for n in f["notes"])]
        if status != 0 or growth or errors or not named:
            failures.append("cache on, no list: expected exit 0, no growth, no error, held_by_allocator entries naming "
                            "the script (got exit %d, %d growth, %d errors, %d named)" % (status, len(growth), len(errors), len(named)))
        # With the cache on, PyTorch's blocks (its memory history, recorded by cuaudit's Python hooks
        # in torch-blocks-<pid>.json) name the line; the segments' own finding gives way to them.
        status, growth, errors, doc = judge("list-cache-on")
        top = growth[0]["stack"][0] if len(growth) == 1 and growth[0]["stack"] else {}
        if (status != 9 or len(growth) != 1 or top.get("line") != line or
                growth[0]["api"] != "CUDACachingAllocator::malloc"):
            failures.append("cache on, list: expected one growth of PyTorch's blocks at torch_growth.py:%d, exit 9 "
                            "(got exit %d, %s)" % (line, status, [(f["api"], f["stack"][0].get("line")) for f in growth]))
        blocks = [s["blocks"] for s in doc["timeline"]["samples"] if "blocks" in s]
        if not blocks or max(blocks) < 500 << 20:
            failures.append("cache on, list: the timeline's allocated (blocks) series is missing or too small (%s)"
                            % (max(blocks) if blocks else None))
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
