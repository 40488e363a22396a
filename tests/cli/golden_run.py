"""Shared by the command-line tests: `cuaudit report` on a private copy of the golden run (report
refreshes the run's symbol cache, which must not touch the checked-in copy)."""
import json
import os
import shutil
import subprocess


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
