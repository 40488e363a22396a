#!/usr/bin/env python3
"""torch_growth.py under cuaudit, with and without the list that keeps every step's activations.

With PyTorch's cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1, every tensor its own allocation): with
the list, exactly one `growth` finding, at the script's @features line (the user's line, not
PyTorch's Python), failing the gate; without it, no growth. With the cache on (the
default): without the list the gate passes too, what PyTorch holds at exit being held_by_allocator
info entries whose Python stacks name the script's lines; with the list, exactly one `growth`
finding at the same line, of PyTorch's blocks (its memory history, started by cuaudit's Python
hooks), and the timeline carries what the blocks held (allocated) beside the segments."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def run(opts, tmp, keep, cache):
    out = os.path.join(tmp, "report.json")
    name = "growth-%s-cache-%s" % ("list" if keep else "plain", "on" if cache else "off")
    save = ["--save", os.path.join(opts.keep_dir, name + "-run")] if opts.keep_dir else []
    cmd = [opts.cuaudit, "--json", out, "--error-exitcode", "9", "--leak-check", "summary"] + save + [
        "--", sys.executable, opts.script] + (["--keep"] if keep else [])
    env = dict(os.environ)
    if not cache:
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if opts.log:
        with open(opts.log, "a") as log:
            log.write("$ " + ("" if cache else "PYTORCH_NO_CUDA_MEMORY_CACHING=1 ") + " ".join(cmd) + "\n" + proc.stdout + proc.stderr + "exit %d\n\n" % proc.returncode)
    report = json.load(open(out))
    if opts.keep_dir:
        with open(os.path.join(opts.keep_dir, name + ".json"), "w") as copy:
            json.dump(report, copy, indent=1)
    return proc.returncode, report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--log")
    ap.add_argument("--keep-dir", help="keep the JSON reports and the recorded runs here")
    opts = ap.parse_args()
    line = next(n for n, text in enumerate(open(opts.script), start=1) if re.search(r"#\s*@features\s*$", text))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        status, report = run(opts, tmp, keep=True, cache=False)
        growth = [f for f in report["findings"] if f["kind"] == "growth"]
        if status != 9:
            failures.append("with the list, cache off: exit status %d, expected 9 (the gate fails)" % status)
        if len(growth) != 1:
            failures.append("with the list, cache off: %d growth findings, expected 1" % len(growth))
        for f in growth:
            top = f["stack"][0] if f["stack"] else {}
            print("with the list, cache off: growth of %s bytes in %s allocations at %s:%s (%s)" % (
                f["bytes"], f["count"], top.get("file"), top.get("line"), top.get("function")))
            if not (top.get("file") or "").endswith("torch_growth.py") or top.get("line") != line:
                failures.append("the growth is attributed to %s:%s, not torch_growth.py:%d" % (top.get("file"),
                                                                                              top.get("line"), line))
        for cache in (False, True):
            status, report = run(opts, tmp, keep=False, cache=cache)
            errors = [f for f in report["findings"] if f["severity"] == "error" and not f["suppressed"]]
            held = [f for f in report["findings"] if f["kind"] == "held_by_allocator"]
            from_script = [f for f in held if any(n.startswith("allocated from Python at") and "torch_growth.py" in n
                                                  for n in f["notes"])]
            what = "without the list, cache %s" % ("on" if cache else "off")
            print("%s: exit %d, %d held_by_allocator entries (%d naming a line of the script), %d errors"
                  % (what, status, len(held), len(from_script), len(errors)))
            if any(f["kind"] == "growth" for f in errors):
                failures.append("%s: a growth finding" % what)
            # The gate is the default configuration's: with the cache off, tensors Python still holds
            # at exit may be reported as leaks (printed above), which is not this test's question.
            if cache and (status != 0 or errors):
                failures.append("%s: exit %d, errors: %s" % (what, status, ", ".join(f["kind"] for f in errors)))
            if cache and not from_script:
                failures.append("%s: no held_by_allocator entry names the script's line it came from" % what)
        # The default settings (cache on): PyTorch's blocks, from its memory history, say the line.
        status, report = run(opts, tmp, keep=True, cache=True)
        growth = [f for f in report["findings"] if f["kind"] == "growth"]
        blocks_note = [n for p in report["processes"] for n in p.get("notes", []) if "caching allocator:" in n]
        print("with the list, cache on: exit %d, %d growth finding(s)%s; %s" % (
            status, len(growth), "".join(" of %s bytes in %s block(s) (%s) at %s:%s" % (
                f["bytes"], f["count"], f["api"], f["stack"][0].get("file"), f["stack"][0].get("line"))
                                         for f in growth if f["stack"]), "; ".join(blocks_note) or "no blocks note"))
        if status != 9:
            failures.append("with the list, cache on: exit status %d, expected 9 (the gate fails)" % status)
        if len(growth) != 1:
            failures.append("with the list, cache on: %d growth findings, expected 1" % len(growth))
        for f in growth:
            top = f["stack"][0] if f["stack"] else {}
            if not (top.get("file") or "").endswith("torch_growth.py") or top.get("line") != line:
                failures.append("cache on: the growth is attributed to %s:%s, not torch_growth.py:%d" % (
                    top.get("file"), top.get("line"), line))
            if f["api"] != "CUDACachingAllocator::malloc":
                failures.append("cache on: the growth is of %s, not of PyTorch's blocks" % f["api"])
        blocks = [s.get("blocks") for s in report.get("timeline", {}).get("samples", []) if s.get("blocks") is not None]
        print("cache on: %d timeline samples carry the blocks' bytes (allocated), the last %s" % (
            len(blocks), blocks[-1] if blocks else None))
        if not blocks:
            failures.append("cache on: the timeline has no allocated (blocks) series")
    if failures:
        print("FAIL torch_growth:\n  " + "\n  ".join(failures))
        return 1
    print("PASS torch_growth: the list's growth is at torch_growth.py:%d with the cache off and on; without it the "
          "gate passes" % line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
