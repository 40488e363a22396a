#!/usr/bin/env python3
"""A long-running program under cuaudit (issue 13): service_requests.cu serves requests for a minute,
one site keeping a 1 MiB buffer per request. Runs it with --snapshot-interval 10s, takes a
`cuaudit snapshot PID` from outside while it runs, and checks:
  - the interim reports appear while it runs, numbered, JSON and HTML, each complete;
  - in each, the @grows site holds more live memory than in the one before (`live` findings);
  - the outside snapshot shows the @grows site live while the program is still running;
  - the final report has exactly one growth finding, at the @grows line, with a rate near what the
    program does (20 MiB a second), and the @level site is not growth.
Usage: check_service.py --cuaudit BIN --program service_requests --source service_requests.cu
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20


def marker_line(source, marker):
    for number, line in enumerate(open(source), start=1):
        if re.search(r"//\s*" + re.escape(marker) + r"\s*$", line):
            return number
    raise SystemExit(f"{source} has no {marker} line")


def at_line(finding, basename, line):
    return any(fr.get("file") and fr["file"].endswith(basename) and fr.get("line") == line
               for fr in finding.get("stack", [])[:3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--keep", help="copy the reports here")
    ap.add_argument("--log")
    opts = ap.parse_args()
    grows = marker_line(opts.source, "@grows")
    level = marker_line(opts.source, "@level")
    base = os.path.basename(opts.source)
    failures = []

    def check(ok, what):
        print(("PASS " if ok else "FAIL ") + what, flush=True)
        if not ok:
            failures.append(what)

    tmp = opts.keep or tempfile.mkdtemp(prefix="cuaudit-service-")
    os.makedirs(tmp, exist_ok=True)
    final_json, final_html = os.path.join(tmp, "report.json"), os.path.join(tmp, "report.html")
    started = time.monotonic()
    service = subprocess.Popen([opts.cuaudit, "--save", os.path.join(tmp, "run"), "--snapshot-interval", "10s",
                                "--json", final_json, "--html", final_html, "--log-file", os.path.join(tmp, "report.txt"),
                                opts.program, str(opts.seconds)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # From another shell, while it runs: the pid of the cuaudit that runs it.
    time.sleep(opts.seconds * 0.45)
    outside = os.path.join(tmp, "outside-snapshot.json")
    taken = subprocess.run([opts.cuaudit, "snapshot", str(service.pid), "--json", outside, "--log-file", os.devnull],
                           capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    check(taken.returncode == 0 and service.poll() is None,
          f"`cuaudit snapshot {service.pid}` at {took:.0f} s, the program still running (exit {taken.returncode}) "
          f"{taken.stderr.strip()[:300]}")
    output, _ = service.communicate(timeout=opts.seconds * 3 + 120)
    check(service.returncode == 0,
          f"the service ran under cuaudit for {time.monotonic() - started:.0f} s (exit {service.returncode})")
    if opts.log:
        with open(opts.log, "a") as log:
            log.write(output)

    def live_at(report, line):
        return sum(f["bytes"] for f in report["findings"] if f["kind"] == "live" and at_line(f, base, line))

    if os.path.exists(outside):
        now = json.load(open(outside))
        held = live_at(now, grows)
        notes = " ".join(now["processes"][0]["notes"]) if now["processes"] else ""
        check(held >= 100 * MIB and "still running" in notes and not now["incomplete"],
              f"the outside snapshot shows {held / MIB:.0f} MiB live at {base}:{grows}, the process still running")
    else:
        check(False, "the outside snapshot wrote no report")

    snapshots = sorted(glob.glob(os.path.join(tmp, "report.snapshot-*.json")),
                       key=lambda p: int(re.search(r"snapshot-(\d+)", p).group(1)))
    htmls = glob.glob(os.path.join(tmp, "report.snapshot-*.html"))
    expected = int(opts.seconds // 10) - 1
    check(len(snapshots) >= expected and len(htmls) == len(snapshots),
          f"{len(snapshots)} interim reports (JSON and HTML) written while it ran, every 10 s")
    climbing = []
    for path in snapshots:
        r = json.load(open(path))
        climbing.append(live_at(r, grows))
        check(not r["incomplete"] and any(f["kind"] == "live" for f in r["findings"]),
              f"{os.path.basename(path)} is complete on its own: {live_at(r, grows) / MIB:.0f} MiB live at "
              f"{base}:{grows}, {len(r['timeline']['samples'])} timeline samples")
    check(len(climbing) >= 2 and all(b > a for a, b in zip(climbing, climbing[1:])),
          f"the @grows site climbs from snapshot to snapshot ({', '.join(f'{b / MIB:.0f}' for b in climbing)} MiB)")

    final = json.load(open(final_json))
    growth = [f for f in final["findings"] if f["kind"] == "growth"]
    check(len(growth) == 1 and at_line(growth[0], base, grows),
          f"the final report has one growth finding, at {base}:{grows}: "
          + "; ".join(f.get("headline", "") for f in growth))
    if growth and growth[0].get("growth"):
        rate = growth[0]["growth"]["bytes_per_hour"] / 3600 / MIB
        check(12 <= rate <= 24, f"its rate, {rate:.1f} MiB a second, is near the program's 20 (1 MiB every 50 ms)")
    check(not any(f["kind"] == "growth" and at_line(f, base, level) for f in final["findings"]),
          f"the level site ({base}:{level}) is not growth")
    series = final["timeline"].get("site_series", [])
    check(bool(series) and any(at_line(s, base, grows) for s in series[0]["sites"]),
          f"the stacked chart has the @grows site ({len(series[0]['sites']) if series else 0} sites drawn)")
    print(("PASS" if not failures else "FAIL") + f": service under --snapshot-interval: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
