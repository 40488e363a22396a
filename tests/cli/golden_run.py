"""Shared by the command-line and report tests: `cuaudit report` on a private copy of the golden run
(report refreshes the run's symbol cache, which must not touch the checked-in copy), and the
closing lines every check prints."""
import argparse
import json
import os
import shutil
import subprocess


def checker_arguments():
    """The options every check takes: --cuaudit (the tool) and --golden (the run it reports on)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    return ap.parse_args()


def report_golden(cuaudit, golden, tmp, *args):
    """Returns (completed process with stderr text, JSON report or None)."""
    run = os.path.join(tmp, "run")
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(golden, run)
    out = os.path.join(tmp, "report.json")
    if os.path.exists(out):
        os.remove(out)
    proc = subprocess.run([cuaudit, "report", run, "--json", out] + list(args), stderr=subprocess.PIPE, text=True)
    return proc, json.load(open(out)) if os.path.exists(out) else None


def finish(failures):
    """Prints the failures and the closing count; returns the exit status."""
    for f in failures:
        print("FAIL " + f)
    print("%d passed, %d failed" % (0 if failures else 1, len(failures)))
    return 1 if failures else 0
