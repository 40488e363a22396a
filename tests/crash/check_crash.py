#!/usr/bin/env python3
"""A process that dies (SIGSEGV, abort, SIGTERM, SIGKILL after the flush interval, an abort inside
malloc, a stack overflow handled by its own alternate-stack handler) or ends with _exit still yields
its report: how it ended is named, the leak is there, and the process ended with
the same status it would have had without cuaudit (exit status and core dump behaviour unchanged).
Signals that land inside the recorder's own append (exit() or free() of pinned memory from the
handler) neither hang nor tear or repeat a record; a forked child whose first event is a crash
inside malloc gets its trace without the handler allocating."""
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
         ("altstack", 42, "ended with _exit(42)"),
         # A crash inside malloc itself: crash_probe ends with 97 if the handler calls malloc again.
         ("inside_malloc", -signal.SIGSEGV, "received SIGSEGV"),
         # exit() from a handler that interrupted the thread's own append: no wait on its own buffer.
         ("exit_in_append", 5, None),
         # free() of pinned memory from such a handler: reported, and the interrupted record (a memory
         # sample) is written once, whole, after the handler's flush.
         ("free_in_append", 0, None),
         # A forked child's first event is its crash inside malloc: its trace still says so.
         ("forked_child_crash", 3, None),
         # A static destructor's release after the end record: read, and the trace is whole; cut
         # after its end record (cut_after_exit), the report says so.
         ("release_at_exit", 3, None)]

SAMPLE_FREE = 1 << 30  # the memory sample the *_in_append cases record


def case_problems(how, report):
    """What the cases beyond "the leak is there" must show."""
    problems = []
    parent = report["processes"][0]
    incomplete = [n for n in parent["notes"] if "damaged" in n or "could not" in n or "unknown record" in n]
    if incomplete:
        problems.append("the trace is not whole: %s" % incomplete)
    if how == "free_in_append":
        mismatched = [f for f in report["findings"] if f["kind"] == "mismatched_free"]
        if len(mismatched) != 1:
            problems.append("expected one mismatched_free for the pinned block, got %d" % len(mismatched))
        samples = [t for t in report["timeline"]["samples"] if t["free"] == SAMPLE_FREE]
        if len(samples) != 1:
            problems.append("the interrupted memory sample appears %d times, expected once" % len(samples))
    if how == "forked_child_crash":
        children = [p for p in report["processes"][1:] if p["pid"] != parent["pid"]]
        if len(children) != 1:
            problems.append("expected the forked child's own trace, got %d other processes" % len(children))
        elif not any("received SIGSEGV" in n for n in children[0]["notes"]):
            problems.append("the child's report does not say it received SIGSEGV: %s" % children[0]["notes"])
    if how == "release_at_exit" and any("cut after the process began to exit" in n for n in parent["notes"]):
        problems.append("a whole trace is said to be cut: %s" % parent["notes"])
    return problems


def chunk_ends(path):
    """Where each chunk of a trace file ends (after its file header, FileHeader::header_size bytes;
    16-byte chunk headers)."""
    data = open(path, "rb").read()
    ends, pos = [], int.from_bytes(data[12:16], "little")
    while pos + 16 <= len(data):
        pos += 16 + int.from_bytes(data[pos + 4:pos + 8], "little")
        ends.append(pos)
    return ends


def cut_after_exit(cuaudit, run, tmp):
    """The release_at_exit run's trace cut before its last chunk, the writer's closing mark after the
    static destructor's release: said (123), never read as whole. (A cut right after an earlier
    closing mark, the release's chunk and its mark both gone, still looks whole: docs/TRACE_FORMAT.md.)"""
    problems = []
    trace = next(os.path.join(run, f) for f in os.listdir(run) if f.endswith(".cutrace"))
    whole = open(trace, "rb").read()
    ends = chunk_ends(trace)
    for drop in (1,):
        open(trace, "wb").write(whole[:ends[-1 - drop]])
        out = os.path.join(tmp, "cut-%d.json" % drop)
        rc = subprocess.run([cuaudit, "report", run, "--json", out], stderr=subprocess.DEVNULL).returncode
        notes = json.load(open(out))["processes"][0]["notes"] if os.path.exists(out) else []
        if rc != 123 or not any("cut after the process began to exit" in n for n in notes):
            problems.append("cut before its last %d chunk(s): exit %d, notes %s" % (drop, rc, notes))
    open(trace, "wb").write(whole)
    return problems


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
                proc = subprocess.run([opts.probe, run, how], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=60, env=dict(os.environ, LD_PRELOAD=opts.preload), text=True)
            except subprocess.TimeoutExpired:
                print("FAIL %s: the process hung (still running after 60 s)" % how)
                failed += 1
                continue
            out = os.path.join(tmp, "report.json")
            subprocess.run([opts.cuaudit, "report", run, "--json", out], stderr=subprocess.DEVNULL)
            problems = []
            if proc.returncode != status:
                problems.append("ended with %d, expected %d (%s)" % (proc.returncode, status, proc.stderr.strip()[-300:]))
            if how == "forked_child_crash" and "child signal %d" % signal.SIGSEGV not in proc.stdout:
                problems.append("the forked child did not end with SIGSEGV: %s %s" % (proc.stdout.strip(), proc.stderr.strip()[-300:]))
            report = json.load(open(out)) if os.path.exists(out) else None
            if not report:
                problems.append("no report")
            else:
                leaks = [f for f in report["findings"] if f["kind"] == "leak"]
                if how == "free_in_append":  # free() is no cudaFreeHost: the pinned block stays leaked too
                    leaks = [f for f in leaks if f["bytes"] != 64]
                if len(leaks) != 1 or leaks[0]["bytes"] != 4096:
                    problems.append("expected the one 4096-byte leak, got %s" % [(f["kind"], f["bytes"]) for f in leaks])
                elif not any("leak_here" in (fr["function"] or "") for fr in leaks[0]["stack"]):
                    problems.append("the leak's stack does not show leak_here()")
                notes = " ".join(report["processes"][0]["notes"])
                if note and note not in notes:
                    problems.append("no note says %r (notes: %s)" % (note, notes))
                problems += case_problems(how, report)
                if how == "release_at_exit":
                    problems += cut_after_exit(opts.cuaudit, run, tmp)
            print("%s %s%s" % ("FAIL" if problems else "PASS", how, ": " + "; ".join(problems) if problems else ""))
            failed += bool(problems)
            passed += not problems
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
