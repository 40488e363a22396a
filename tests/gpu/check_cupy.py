#!/usr/bin/env python3
"""cupy_pool.py under cuaudit, in its three modes: the pool-heavy correct loop passes the gate with no
error finding; the growing one fails it with one growth finding at the @grow line, of the pool's
blocks (MemoryPool.malloc, through cuaudit's memory hook), on the importing thread and on a worker
thread; the raw cudaMalloc never freed is a leak whose Python stack names the @raw line."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def marker(script, name):
    return next(n for n, text in enumerate(open(script), start=1) if re.search(r"#\s*@%s\s*$" % name, text))


def run(opts, tmp, mode):
    out = os.path.join(tmp, mode + ".json")
    cmd = [opts.cuaudit, "--json", out, "--error-exitcode", "9", "--leak-check", "summary", "--", sys.executable,
           opts.script, mode]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if opts.log:
        with open(opts.log, "a") as log:
            log.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr + "exit %d\n\n" % proc.returncode)
    return proc.returncode, json.load(open(out))


def errors(report):
    return [f for f in report["findings"] if f["severity"] == "error" and not f["suppressed"]]


def describe(f):
    top = f["stack"][0] if f["stack"] else {}
    return "%s %s %s bytes in %s at %s:%s" % (f["kind"], f["api"], f["bytes"], f["count"], top.get("file"),
                                             top.get("line"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--log")
    opts = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        status, report = run(opts, tmp, "correct")
        blocks = [f for f in report["findings"] if f["api"].startswith("MemoryPool")]
        print("correct: exit %d, errors: %s; %d allocations tracked" % (
            status, [describe(f) for f in errors(report)] or "none", report["processes"][0]["allocations"]))
        if status != 0 or errors(report):
            failures.append("correct loop: exit %d with %d error finding(s)" % (status, len(errors(report))))
        if report["processes"][0]["allocations"] < 150:
            failures.append("correct loop: only %d allocations tracked: the pool's blocks were not seen" %
                            report["processes"][0]["allocations"])

        status, report = run(opts, tmp, "grow")
        growth = [f for f in report["findings"] if f["kind"] == "growth"]
        print("grow: exit %d, growth: %s" % (status, [describe(f) for f in growth]))
        line = marker(opts.script, "grow")
        if status != 9 or len(growth) != 1:
            failures.append("growing loop: exit %d, %d growth finding(s); expected 9 and 1" % (status, len(growth)))
        for f in growth:
            top = f["stack"][0] if f["stack"] else {}
            if top.get("line") != line or not (top.get("file") or "").endswith("cupy_pool.py"):
                failures.append("growth at %s:%s, not cupy_pool.py:%d" % (top.get("file"), top.get("line"), line))
            if f["api"] != "MemoryPool.malloc":
                failures.append("growth of %s, not of the pool's blocks" % f["api"])

        status, report = run(opts, tmp, "raw")
        leaks = [f for f in report["findings"] if f["kind"] == "leak"]
        line = marker(opts.script, "raw")
        print("raw: exit %d, leaks: %s" % (status, [(describe(f), [n for n in f["notes"] if "Python" in n])
                                                   for f in leaks]))
        named = [f for f in leaks if any("cupy_pool.py:%d" % line in n for n in f["notes"])]
        if status != 9 or len(leaks) != 1 or not named:
            failures.append("raw malloc: exit %d, %d leak(s), %d naming cupy_pool.py:%d" % (status, len(leaks),
                                                                                            len(named), line))
        # A worker thread started after the import: CuPy's hooks are per thread, cuaudit enters its own
        # in every new thread, and the report says on how many.
        status, report = run(opts, tmp, "thread")
        growth = [f for f in report["findings"] if f["kind"] == "growth"]
        notes = [n for n in report["processes"][0].get("notes", []) if "CuPy's memory hook" in n]
        print("thread: exit %d, growth: %s; hook notes: %s" % (status, [describe(f) for f in growth], notes))
        line = marker(opts.script, "thread-grow")
        if status != 9 or len(growth) != 1 or (growth[0]["stack"][0] if growth[0]["stack"] else {}).get("line") != line:
            failures.append("worker thread: exit %d, growth %s; expected one at cupy_pool.py:%d" % (
                status, [describe(f) for f in growth], line))
        counts = [int(m.group(1)) for n in notes for m in [re.search(r"attached on (\d+) thread", n)] if m]
        if not counts or counts[0] < 2:
            failures.append("worker thread: no note that CuPy's hook attached on the worker too: %s" % notes)
    if failures:
        print("FAIL cupy_pool:\n  " + "\n  ".join(failures))
        return 1
    print("PASS cupy_pool: the correct loop passes, the growing one grows at its line (on a worker thread too), the raw "
          "malloc leaks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
