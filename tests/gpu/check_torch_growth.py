#!/usr/bin/env python3
"""torch_growth.py under cuaudit, with and without the list that keeps every step's activations:
with it, exactly one `growth` finding, at the script's @features line (the user's line, not
PyTorch's Python), failing the gate; without it, no growth and no error, what PyTorch holds at exit
being held_by_allocator info entries whose Python stacks name the script's lines."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def run(opts, tmp, keep):
    out = os.path.join(tmp, "keep.json" if keep else "plain.json")
    cmd = [opts.cuaudit, "--json", out, "--error-exitcode", "9", "--leak-check", "summary", "--",
           sys.executable, opts.script] + (["--keep"] if keep else [])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if opts.log:
        with open(opts.log, "a") as log:
            log.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr + "exit %d\n\n" % proc.returncode)
    return proc.returncode, json.load(open(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--log")
    opts = ap.parse_args()
    line = next(n for n, text in enumerate(open(opts.script), start=1) if re.search(r"#\s*@features\s*$", text))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        status, report = run(opts, tmp, keep=True)
        growth = [f for f in report["findings"] if f["kind"] == "growth"]
        if status != 9:
            failures.append("with the list: exit status %d, expected 9 (the gate fails)" % status)
        if len(growth) != 1:
            failures.append("with the list: %d growth findings, expected 1" % len(growth))
        for f in growth:
            top = f["stack"][0] if f["stack"] else {}
            print("growth: %s bytes in %s allocations at %s:%s (%s)" % (f["bytes"], f["count"], top.get("file"),
                                                                        top.get("line"), top.get("function")))
            if not (top.get("file") or "").endswith("torch_growth.py") or top.get("line") != line:
                failures.append("the growth is attributed to %s:%s, not torch_growth.py:%d" % (top.get("file"),
                                                                                              top.get("line"), line))
        status, report = run(opts, tmp, keep=False)
        errors = [f for f in report["findings"] if f["severity"] == "error" and not f["suppressed"]]
        held = [f for f in report["findings"] if f["kind"] == "held_by_allocator"]
        from_script = [f for f in held if any(n.startswith("allocated from Python at") and "torch_growth.py" in n
                                              for n in f["notes"])]
        print("without the list: exit %d, %d held_by_allocator entries (%d naming a line of the script), %d errors"
              % (status, len(held), len(from_script), len(errors)))
        if status != 0 or errors:
            failures.append("without the list: exit %d, errors: %s" % (status, ", ".join(f["kind"] for f in errors)))
        if not from_script:
            failures.append("without the list: no held_by_allocator entry names the script's line it came from")
    if failures:
        print("FAIL torch_growth:\n  " + "\n  ".join(failures))
        return 1
    print("PASS torch_growth: the list's growth is at torch_growth.py:%d; without it the gate passes" % line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
