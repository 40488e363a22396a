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
    ap.add_argument("--drop", action="append", default=[],
                    help="a file of the run to remove first (the kernel-access cache), to see the report without it")
    ap.add_argument("--extra", action="append", default=[], help="one more `cuaudit report` argument")
    opts = ap.parse_args()
    expected = json.load(open(opts.expected))
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "run")
        shutil.copytree(opts.run_dir, run)
        for name in opts.drop:
            os.remove(os.path.join(run, name))
        out = os.path.join(tmp, "report.json")
        proc = subprocess.run([opts.cuaudit, "report", run, "--json", out, "--error-exitcode", "9"] + opts.extra,
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
    # Words each finding's text (headline, message or notes) must hold, in the order of "findings".
    texts = {key(f): " ".join([f["headline"], f["message"]] + f["notes"]) for f in report["findings"]}
    for finding, words in zip(expected["findings"], expected.get("texts", [])):
        for word in words:
            if word not in texts.get(tuple(finding), ""):
                failures.append("the finding %s does not say %r" % (finding, word))
    for note in expected.get("report_notes", []):
        if not any(note in n for n in report.get("notes", [])):
            failures.append("no report note says %r (notes: %s)" % (note, report.get("notes")))
    if report["processes"][0]["exit_code"] != expected["program_exit_code"]:
        failures.append("the program's exit code is not the recorded one")
    if failures:
        print("FAIL golden:\n  " + "\n  ".join(failures))
        return 1
    print("PASS golden: %d finding(s) as recorded on the GPU machine" % len(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
