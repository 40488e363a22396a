#!/usr/bin/env python3
"""A CI timeout stops the job (issue 36, item 1), on the GPU: each case must still give its report.
  - `timeout -s TERM 6 cuaudit ... service_requests 60`: the CUDA service stopped after 6 s has its
    response cache (the @grows line) reported, and the note that cuaudit passed SIGTERM on;
  - `timeout -s TERM 20 cuaudit ... python torch_long_job.py`: the PyTorch job, stopped with its
    process group, still has its report (timeout signals cuaudit and the group at once);
  - SIGTERM to cuaudit alone (a container's stop reaches only PID 1): cuaudit asks the Python hooks
    for PyTorch's blocks first, so the tensors are reported at the @keep line.
Usage: check_stop_by_timeout.py --cuaudit BIN --service BIN [--keep DIR]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20


def tagged_line(path, tag):
    return next(n for n, line in enumerate(open(path), 1) if line.rstrip().endswith(tag))


def at_line(f, source, line):
    return any((fr.get("file") or "").endswith(os.path.basename(source)) and fr.get("line") == line
               for fr in f.get("stack", [])[:8])


def describe(report):
    return [(f["kind"], f["severity"], f.get("bytes"), (f.get("headline") or "")[:90]) for f in report["findings"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--service", required=True)
    ap.add_argument("--keep")
    opts = ap.parse_args()
    tmp = opts.keep or tempfile.mkdtemp(prefix="cuaudit-stop-")
    os.makedirs(tmp, exist_ok=True)
    failures = []

    def check(ok, what):
        print(("  ok " if ok else "  FAILED ") + what)
        if not ok:
            failures.append(what)

    def load(path):
        try:
            return json.load(open(path))
        except (OSError, ValueError):
            return None

    def stop_note(report):
        return next((n for n in report.get("notes", []) if "passed it on" in n), None)

    # 1. A CUDA program under `timeout -s TERM`.
    source = os.path.join(HERE, "service_requests.cu")
    grows = tagged_line(source, "// @grows")
    out = os.path.join(tmp, "service.json")
    began = time.time()
    done = subprocess.run(["timeout", "-s", "TERM", "6", opts.cuaudit, "--json", out, opts.service, "60"],
                          capture_output=True, text=True, timeout=300)
    report = load(out)
    check(done.returncode == 124 and report is not None,
          "CUDA service under timeout -s TERM 6: exit %d after %.1f s, report %s" % (
              done.returncode, time.time() - began, "written" if report else "MISSING"))
    if report:
        at = [f for f in report["findings"] if at_line(f, source, grows) and f["severity"] != "info"]
        check(bool(at), "its response cache at service_requests.cu:%d: %s" % (
            grows, "; ".join("%s %s %.0f MiB" % (f["kind"], f["severity"], f["bytes"] / MIB) for f in at) or
            describe(report)))
        check(bool(stop_note(report)), "note: %s" % stop_note(report))
        print("  text report (end):\n    " + "\n    ".join(done.stderr.strip().splitlines()[-12:]))

    # 2. A PyTorch job under `timeout -s TERM`.
    script = os.path.join(HERE, "torch_long_job.py")
    keep = tagged_line(script, "# @keep")
    out = os.path.join(tmp, "torch-timeout.json")
    began = time.time()
    done = subprocess.run(["timeout", "-s", "TERM", "20", opts.cuaudit, "--json", out, "--", sys.executable, script],
                          capture_output=True, text=True, timeout=300)
    report = load(out)
    check(done.returncode == 124 and report is not None,
          "PyTorch job under timeout -s TERM 20: exit %d after %.1f s, report %s" % (
              done.returncode, time.time() - began, "written" if report else "MISSING"))
    if report:
        print("  findings:", describe(report))
        check(bool(stop_note(report)), "note: %s" % stop_note(report))
        print("  text report (end):\n    " + "\n    ".join(done.stderr.strip().splitlines()[-12:]))

    # 3. SIGTERM to cuaudit alone: the hooks write PyTorch's blocks before the job gets it.
    out = os.path.join(tmp, "torch-term.json")
    job = subprocess.Popen([opts.cuaudit, "--json", out, "--", sys.executable, script], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    if job.stdout.readline().strip() != "running":
        check(False, "the PyTorch job did not start: " + job.stderr.read()[-2000:])
    else:
        time.sleep(3)
        began = time.time()
        job.send_signal(signal.SIGTERM)
        _, err = job.communicate(timeout=300)
        report = load(out)
        check(job.returncode == 128 + signal.SIGTERM and report is not None,
              "PyTorch job, SIGTERM to cuaudit: exit %d, %.1f s after the signal, report %s" % (
                  job.returncode, time.time() - began, "written" if report else "MISSING"))
        if report:
            at = [f for f in report["findings"] if at_line(f, script, keep)]
            check(bool(at), "its tensors at torch_long_job.py:%d: %s" % (
                keep, "; ".join("%s %s %.0f MiB in %d" % (f["kind"], f["severity"], f["bytes"] / MIB, f["count"])
                                for f in at) or describe(report)))
            check(bool(stop_note(report)), "note: %s" % stop_note(report))
            print("  text report (end):\n    " + "\n    ".join(err.strip().splitlines()[-12:]))
    if not opts.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print(("PASS" if not failures else "FAIL") + ": reports of jobs stopped by SIGTERM, %d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
