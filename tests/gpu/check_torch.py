#!/usr/bin/env python3
"""Runs a PyTorch script under cuaudit and checks that PyTorch's normal operation is tracked, gives
no unchecked_error, and passes the gate: what PyTorch and cuBLAS hold on purpose at exit is
held_by_allocator (info), so no finding of severity error remains."""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--log")
    ap.add_argument("--keep-json", help="copy the JSON report here")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        cmd = [opts.cuaudit, "--json", out, "--leak-check", "summary", "--", sys.executable, opts.script]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if opts.log:
            with open(opts.log, "a") as log:
                log.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr + "exit %d\n\n" % proc.returncode)
        report = json.load(open(out))
        if opts.keep_json:
            with open(opts.keep_json, "w") as copy:
                json.dump(report, copy, indent=1)
    failures = []
    if proc.returncode != 0:
        failures.append("exit status %d" % proc.returncode)
    if not report["processes"] or not report["processes"][0]["tracked"]:
        failures.append("the process was not tracked")
    unchecked = [f for f in report["findings"] if f["kind"] == "unchecked_error"]
    for f in unchecked:
        top = f["stack"][0] if f["stack"] else {}
        failures.append("unchecked_error: %s %s at %s" % (f["api"], f["result"], top.get("function")))
    # A training loop's steady state reuses PyTorch's cached segments: no site churns.
    for f in report["findings"]:
        if f["kind"] == "allocation_churn":
            top = f["stack"][0] if f["stack"] else {}
            failures.append("allocation_churn in a training loop: %s" % f["headline"])
    if report["summary"]["errors"] != 0:
        errors = [f for f in report["findings"] if f["severity"] == "error" and not f["suppressed"]]
        for f in errors:
            top = f["stack"][0] if f["stack"] else {}
            failures.append("error finding: %s %s %s at %s (%s)" % (f["kind"], f["api"], f["bytes"], top.get("function"),
                                                                   top.get("module")))
    kinds = sorted({f["kind"] for f in report["findings"]})
    if failures:
        print("FAIL %s:\n  %s" % (os.path.basename(opts.script), "\n  ".join(failures)))
        return 1
    print("PASS %s: tracked, no unchecked_error, no allocation_churn, passes the gate (finding kinds: %s)" %
          (os.path.basename(opts.script), ", ".join(kinds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
