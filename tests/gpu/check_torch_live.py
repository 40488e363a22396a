#!/usr/bin/env python3
"""PyTorch's blocks while the job runs and after SIGKILL (issue 31, item 5), on the GPU:
  - `cuaudit snapshot PID` of a running PyTorch job shows its tensors live at the Python line that
    keeps them (the hooks write PyTorch's file when asked), twice, the second holding more;
  - the same job killed with SIGKILL (CUAUDIT_FRAMEWORK_WRITE_MS=1000) still gets a report with
    the tensors live at that line when it died, and a note saying when the hooks last wrote the file.
Usage: check_torch_live.py --cuaudit BIN [--script tests/gpu/torch_long_job.py] [--keep DIR]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20


def keep_line(script):
    return next(n for n, line in enumerate(open(script), 1) if line.rstrip().endswith("# @keep"))


def at_line(f, script, line):
    top = f["stack"][0] if f.get("stack") else {}
    return (top.get("file") or "").endswith(os.path.basename(script)) and top.get("line") == line


def start(opts, run_dir, env=None):
    job = subprocess.Popen([opts.cuaudit, "--save", run_dir, "--json", run_dir + ".json", "--", sys.executable,
                            opts.script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, **(env or {})))
    if job.stdout.readline().strip() != "running":
        raise SystemExit("FAIL: the job did not start: " + job.stderr.read()[-2000:])
    return job


def python_pid(job):
    """The job's Python process (the launcher's child)."""
    for _ in range(100):
        children = open("/proc/%d/task/%d/children" % (job.pid, job.pid)).read().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise SystemExit("FAIL: no child of the launcher")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--script", default=os.path.join(os.path.dirname(__file__), "torch_long_job.py"))
    ap.add_argument("--keep")
    opts = ap.parse_args()
    tmp = opts.keep or tempfile.mkdtemp()
    os.makedirs(tmp, exist_ok=True)
    line = keep_line(opts.script)
    failures = []

    def check(ok, what):
        print(("  ok " if ok else "  FAILED ") + what)
        if not ok:
            failures.append(what)

    # Snapshots of the running job.
    job = start(opts, os.path.join(tmp, "snapshot-run"), {"CUAUDIT_FRAMEWORK_WRITE_MS": "0"})
    held = []
    for number in (1, 2):
        time.sleep(2)
        out = os.path.join(tmp, "snapshot-%d.json" % number)
        began = time.time()
        taken = subprocess.run([opts.cuaudit, "snapshot", str(job.pid), "--json", out], capture_output=True, text=True)
        report = json.load(open(out)) if os.path.exists(out) else {"findings": []}
        live = [f for f in report["findings"] if f["kind"] == "live" and at_line(f, opts.script, line)]
        held.append(sum(f["bytes"] for f in live))
        check(taken.returncode == 0 and len(live) == 1 and "warning" not in taken.stderr,
              "snapshot %d (%.1f s): %s at %s:%d (exit %d%s)" % (
                  number, time.time() - began, "%.0f MiB live in %d tensor(s)" % (held[-1] / MIB, live[0]["count"])
                  if live else "nothing live", os.path.basename(opts.script), line, taken.returncode,
                  ("; " + taken.stderr.strip()[-300:]) if taken.stderr.strip() else ""))
    check(len(held) == 2 and held[1] > held[0] > 0, "the second snapshot holds more (%s MiB)" %
          ", ".join("%.0f" % (b / MIB) for b in held))
    os.kill(python_pid(job), signal.SIGINT)  # the job ends (the launcher leaves interrupts to it)
    job.communicate(timeout=300)

    # SIGKILL: what the hooks wrote last.
    run_dir = os.path.join(tmp, "killed-run")
    job = start(opts, run_dir, {"CUAUDIT_FRAMEWORK_WRITE_MS": "1000"})
    pid = python_pid(job)
    # Killed once the hooks wrote the file (PyTorch's first memory snapshot of a process is slow:
    # 4.6 s on the H200), then after one more periodic write.
    began = time.time()
    while not os.path.exists(os.path.join(run_dir, "torch-blocks-%d.json" % pid)) and time.time() - began < 60:
        time.sleep(0.1)
    first_write = time.time() - began
    time.sleep(1.5)
    os.kill(pid, signal.SIGKILL)
    print("  (first write %.1f s after the job printed running)" % first_write)
    job.communicate(timeout=300)
    report_path = os.path.join(tmp, "killed-run.json")
    report = json.load(open(report_path)) if os.path.exists(report_path) else {"findings": [], "processes": [{}]}
    # The tensors as the hooks last wrote them: live when the process died (growth may come too).
    found = [f for f in report["findings"] if at_line(f, opts.script, line) and f["kind"] == "live"]
    notes = [n for p in report.get("processes", []) for n in p.get("notes", []) if "last wrote the file" in n]
    check(len(found) == 1, "after SIGKILL: %s" % (
        "%s (%s) of %.0f MiB at %s:%d" % (found[0]["kind"], found[0]["severity"], found[0]["bytes"] / MIB,
                                          os.path.basename(opts.script), line) if found else
        "no finding at the @keep line: %s" % [(f["kind"], f.get("headline", "")[:80]) for f in report["findings"]]))
    check(bool(notes), "the note: %s" % (notes[0][:220] if notes else "none"))
    print(("PASS" if not failures else "FAIL") + ": PyTorch's blocks while running and after SIGKILL, %d failure(s)" %
          len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
