#!/usr/bin/env python3
"""A process that dies (SIGSEGV, abort, SIGTERM, SIGKILL after the flush interval, an abort inside
malloc, a stack overflow handled by its own alternate-stack handler) or ends with _exit still yields
its report: how it ended is named, the leak is there, and the process ended with
the same status it would have had without cuaudit (exit status and core dump behaviour unchanged)."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile

# (how it ends, what the process's status must be, what its report must say)
CASES = [("segv", -signal.SIGSEGV, "received SIGSEGV"), ("abort", -signal.SIGABRT, "received SIGABRT"),
         ("term", -signal.SIGTERM, "received SIGTERM"), ("kill", -signal.SIGKILL, "without a signal cuaudit could catch"),
         ("_exit", 3, "ended with _exit(3)"),
         # glibc aborts inside free() holding its arena lock, on a thread that never recorded: the
         # handler must not need malloc (a dlopen'ed library's thread-locals do), or it hangs for ever.
         ("malloc_crash", -signal.SIGABRT, "received SIGABRT"),
         # A stack overflow with the program's own handler on an alternate stack: that handler runs.
         ("altstack", 42, "ended with _exit(42)")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--preload", required=True, help="libcuaudit-preload.so, preloaded as the launcher does")
    opts = ap.parse_args()
    passed, failed = 0, 0
    for how, status, note in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            try:
                proc = subprocess.run([opts.probe, run, how], stderr=subprocess.DEVNULL, timeout=60,
                                      env=dict(os.environ, LD_PRELOAD=opts.preload))
            except subprocess.TimeoutExpired:
                print("FAIL %s: the process hung (still running after 60 s)" % how)
                failed += 1
                continue
            out = os.path.join(tmp, "report.json")
            subprocess.run([opts.cuaudit, "report", run, "--json", out], stderr=subprocess.DEVNULL)
            problems = []
            if proc.returncode != status:
                problems.append("ended with %d, expected %d" % (proc.returncode, status))
            report = json.load(open(out)) if os.path.exists(out) else None
            if not report:
                problems.append("no report")
            else:
                leaks = [f for f in report["findings"] if f["kind"] == "leak"]
                if len(leaks) != 1 or leaks[0]["bytes"] != 4096:
                    problems.append("expected the one 4096-byte leak, got %s" % [(f["kind"], f["bytes"]) for f in leaks])
                elif not any("leak_here" in (fr["function"] or "") for fr in leaks[0]["stack"]):
                    problems.append("the leak's stack does not show leak_here()")
                notes = " ".join(report["processes"][0]["notes"])
                if note not in notes:
                    problems.append("no note says %r (notes: %s)" % (note, notes))
            print("%s %s%s" % ("FAIL" if problems else "PASS", how, ": " + "; ".join(problems) if problems else ""))
            failed += bool(problems)
            passed += not problems
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
