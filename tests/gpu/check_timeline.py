#!/usr/bin/env python3
"""The memory timeline of timeline_phases.cu: three phases of 1, 3 and 2 GiB, each held about
300 ms, with the memory released in between. Checks that the JSON samples show each phase at its
height (device memory in use above the pre-phase baseline, and the tracked bytes) for as long as
it lasted, and that the report's peak is phase two's, at its time, with phase two's allocation
site holding the most.

Either runs the program under cuaudit (on a GPU machine):
  check_timeline.py --cuaudit BIN --program gpu_timeline_phases --source timeline_phases.cu [--keep-run DIR]
or replays a run recorded there (anywhere):
  check_timeline.py --cuaudit BIN --run-dir tests/golden/timeline-run --source timeline_phases.cu
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

GIB = 1 << 30
MIB = 1 << 20
PHASES = [("phase_one", "@phase1", 1 * GIB), ("phase_two", "@phase2", 3 * GIB), ("phase_three", "@phase3", 2 * GIB)]
HOLD_S = 0.300  # what hold() sleeps with the phase's memory allocated


def marker_lines(source):
    lines = {}
    for number, line in enumerate(open(source), start=1):
        m = re.search(r"//.*(@phase\d)\s*$", line)
        if m:
            lines[m.group(1)] = number
    return lines


def produce_report(opts, tmp):
    json_path = os.path.join(tmp, "report.json")
    if opts.run_dir:
        run = os.path.join(tmp, "run")
        shutil.copytree(opts.run_dir, run)
        cmd = [opts.cuaudit, "report", "--json", json_path, run]
    else:
        cmd = [opts.cuaudit, "--json", json_path]
        cmd += ["--html", opts.html] if opts.html else []
        cmd += ["--save", opts.keep_run] if opts.keep_run else []
        cmd += ["--", opts.program]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    print(proc.stderr[-3000:], end="")
    if proc.returncode != 0 or not os.path.exists(json_path):
        raise SystemExit("FAIL: %s exited %d" % (" ".join(cmd), proc.returncode))
    return json.load(open(json_path))


def check(report, lines):
    failures = []
    pid = report["processes"][0]["pid"]
    samples = [s for s in report["timeline"]["samples"] if s["pid"] == pid and s["device"] == 0]
    print("%d samples over %.3f s" % (len(samples), samples[-1]["t"] if samples else 0))
    if len(samples) < 50:
        return ["only %d samples on device 0; the program ran for well over a second at 10 ms" % len(samples)]
    windows = []
    for name, _, size in PHASES:
        # The phase is the longest run of samples holding its size (the same total can pass by
        # for a moment while another phase's memory is allocated or released).
        best, start = None, None
        for i, sample in enumerate(samples + [{"tracked": -1}]):
            if sample["tracked"] == size and start is None:
                start = i
            elif sample["tracked"] != size and start is not None:
                if best is None or i - 1 - start > best[1] - best[0]:
                    best = (start, i - 1)
                start = None
        if best is None:
            failures.append("no sample has %s's %d MiB tracked" % (name, size // MIB))
            continue
        windows.append((name, size, best[0], best[1]))
    if failures:
        return failures
    first = windows[0][2]
    before = sorted(s["used"] for s in samples[:first] if s["tracked"] == 0)
    if not before:
        return ["no sample before phase one to take the baseline from"]
    baseline = before[len(before) // 2]
    print("baseline before phase one: %.1f MiB in use" % (baseline / MIB))
    for (name, size, lo, hi), nxt in zip(windows, windows[1:] + [None]):
        inside = samples[lo:hi + 1]
        height = max(s["used"] for s in inside) - baseline
        duration = inside[-1]["t"] - inside[0]["t"]
        print("%s: %d samples, %.1f MiB above the baseline (allocated %d MiB), held for %.3f s from %.3f s"
              % (name, len(inside), height / MIB, size // MIB, duration, inside[0]["t"]))
        if abs(height - size) > 64 * MIB + size // 20:
            failures.append("%s: %.1f MiB above the baseline in use, the program allocated %d MiB"
                            % (name, height / MIB, size // MIB))
        if not HOLD_S - 0.05 <= duration <= HOLD_S + 0.15:
            failures.append("%s: samples span %.3f s, the program held the memory ~%.3f s" % (name, duration, HOLD_S))
        if any(s["tracked"] != size for s in inside):
            failures.append("%s: the tracked bytes moved while the phase held its memory" % name)
        gap = samples[hi + 1:nxt[2]] if nxt else samples[hi + 1:]
        low = [s for s in gap if s["tracked"] == 0]
        if not low or min(s["used"] for s in low) - baseline > 64 * MIB:
            failures.append("%s: memory in use did not fall back to the baseline after it" % name)
    peaks = [p for p in report["timeline"]["peaks"] if p["pid"] == pid and p["device"] == 0]
    if len(peaks) != 1:
        return failures + ["%d peaks for device 0, expected 1" % len(peaks)]
    peak = peaks[0]
    _, size, lo, hi = windows[1]
    print("peak: %.1f MiB in use at %.3f s, %.1f MiB tracked" % (peak["used"] / MIB, peak["t"], peak["tracked"] / MIB))
    if not samples[lo]["t"] <= peak["t"] <= samples[hi]["t"]:
        failures.append("the peak at %.3f s is not in phase two (%.3f-%.3f s)" % (peak["t"], samples[lo]["t"], samples[hi]["t"]))
    if peak["used"] != max(s["used"] for s in samples) or peak["tracked"] != size:
        failures.append("the peak is not the highest sample of phase two")
    top = peak["sites"][0] if peak["sites"] else {"stack": []}
    frame = top["stack"][0] if top["stack"] else {}
    print("biggest site at the peak: %s bytes in %s allocation(s) at %s %s:%s" % (
        top.get("bytes"), top.get("count"), frame.get("function"), frame.get("file"), frame.get("line")))
    if top.get("bytes") != size or top.get("count") != 12 or frame.get("line") != lines["@phase2"] \
            or "phase_two" not in (frame.get("function") or ""):
        failures.append("the biggest site at the peak is not phase two's cudaMalloc at line %d" % lines["@phase2"])
    if report["findings"]:
        failures.append("%d findings; the program releases everything" % len(report["findings"]))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--program")
    ap.add_argument("--run-dir")
    ap.add_argument("--keep-run")
    ap.add_argument("--html", help="also write the HTML report here (with --program)")
    opts = ap.parse_args()
    if bool(opts.program) == bool(opts.run_dir):
        ap.error("give --program (record) or --run-dir (replay)")
    with tempfile.TemporaryDirectory() as tmp:
        report = produce_report(opts, tmp)
    failures = check(report, marker_lines(opts.source))
    if failures:
        print("FAIL timeline:\n  " + "\n  ".join(failures))
        return 1
    print("PASS timeline: three phases at their heights and times, the peak in phase two at its site")
    return 0


if __name__ == "__main__":
    sys.exit(main())
