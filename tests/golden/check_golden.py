#!/usr/bin/env python3
"""Golden test: `cuaudit report` on a run recorded on the H200 must give the expected findings on
any machine, GPU or not, and whether or not the program's binaries exist here (symbols come from
the run's symbols.json). The run directory is copied first: report refreshes its symbol cache."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def key(finding):
    top = finding["stack"][0] if finding["stack"] else {}
    return (finding["kind"], finding["api"], finding["bytes"], finding["count"],
            os.path.basename(top.get("file") or ""), top.get("line"), top.get("function"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--expected", required=True)
    opts = ap.parse_args()
    expected = json.load(open(opts.expected))
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "run")
        shutil.copytree(opts.run_dir, run)
        out = os.path.join(tmp, "report.json")
        proc = subprocess.run([opts.cuaudit, "report", run, "--json", out, "--error-exitcode", "9"],
                              stderr=subprocess.PIPE, text=True)
        print(proc.stderr, end="")
        report = json.load(open(out))
    failures = []
    if proc.returncode != expected["exit_status"]:
        failures.append("exit status %d, expected %d" % (proc.returncode, expected["exit_status"]))
    got = sorted(key(f) for f in report["findings"])
    want = sorted(tuple(f) for f in expected["findings"])
    if got != want:
        failures.append("findings differ:\n    got  %s\n    want %s" % (got, want))
    for field in ("leaked_bytes", "leaked_allocations"):
        if report["summary"][field] != expected["summary"][field]:
            failures.append("summary.%s is %s, expected %s" % (field, report["summary"][field], expected["summary"][field]))
    if report["processes"][0]["exit_code"] != expected["program_exit_code"]:
        failures.append("the program's exit code is not the recorded one")
    if failures:
        print("FAIL golden:\n  " + "\n  ".join(failures))
        return 1
    print("PASS golden: %d finding(s) as recorded on the GPU machine" % len(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
