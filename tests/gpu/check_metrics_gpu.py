#!/usr/bin/env python3
"""`cuaudit --metrics` on a real GPU program (issue 55, step 3): the program runs under cuaudit
while this script scrapes http://127.0.0.1:PORT/metrics every --every seconds; the growing site
(the @MARKER line of --source) must rise from scrape to scrape in cuaudit_site_live_bytes, and
the device's used memory must be there. With --stop-after N the program is stopped with SIGTERM
after N scrapes (a PyTorch job that runs until stopped), and cuaudit must still end with a report.
Usage: check_metrics_gpu.py --cuaudit BIN --source FILE --marker NAME [--keep DIR] -- PROGRAM ARGS..."""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--marker", required=True)
    ap.add_argument("--scrapes", type=int, default=5)
    ap.add_argument("--every", type=float, default=2.0)
    ap.add_argument("--stop-after", action="store_true", help="SIGTERM the program after the scrapes")
    ap.add_argument("--keep", help="a directory for the scrapes and the report")
    ap.add_argument("--cuaudit-arg", action="append", default=[],
                    help="an option for cuaudit before the program (e.g. --mode=watch); repeatable")
    ap.add_argument("--expect-in-report", action="append", default=[],
                    help="a regular expression the final text report must match; repeatable")
    ap.add_argument("program", nargs="+")
    opts = ap.parse_args()
    # The marker ends its line ("// @grows", "# @keep"); a comment that names it elsewhere is not it.
    line = next(n for n, text in enumerate(open(opts.source), 1) if re.search(r"(//|#)\s*@%s\s*$" % opts.marker, text))
    site = "%s:%d" % (os.path.basename(opts.source), line)
    keep = opts.keep or "/tmp/cuaudit-metrics-gpu"
    os.makedirs(keep, exist_ok=True)
    port = free_port()
    cmd = [opts.cuaudit, "--metrics", "127.0.0.1:%d" % port, "--metrics-interval", "1s",
           "--metrics-file", os.path.join(keep, "final.prom"), "--log-file", os.path.join(keep, "report.txt"),
           ] + opts.cuaudit_arg + ["--"] + opts.program
    started = time.time()
    run = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    values, failures = [], []
    time.sleep(opts.every + 1)
    for i in range(opts.scrapes):
        t0 = time.time()
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as answer:
                text = answer.read().decode()
        except OSError as e:
            failures.append("scrape %d: %s" % (i, e))
            break
        took = time.time() - t0
        open(os.path.join(keep, "scrape-%d.prom" % i), "w").write(text)
        found = [float(m.group(1)) for m in re.finditer(
            r'^cuaudit_site_live_bytes\{[^}]*site="[^"]*%s"[^}]*\} (\S+)$' % re.escape(site), text, re.M)]
        values.append(sum(found))
        used = re.search(r"^cuaudit_device_used_bytes\{[^}]*\} (\S+)$", text, re.M)
        print("scrape %d at %.1f s (answered in %.3f s): %s holds %.1f MiB; device used %s" % (
            i, time.time() - started, took, site, values[-1] / 2**20,
            "%.1f MiB" % (float(used.group(1)) / 2**20) if used else "absent"))
        time.sleep(opts.every)
    if opts.stop_after:
        run.send_signal(signal.SIGTERM)
    _, stderr = run.communicate(timeout=120)
    report = open(os.path.join(keep, "report.txt")).read() if os.path.exists(os.path.join(keep, "report.txt")) else ""
    rising = [b > a for a, b in zip(values, values[1:])]
    if len(values) < 3 or values[-1] <= values[0] or sum(rising) < len(rising) - 1:
        failures.append("the site %s did not rise from scrape to scrape: %s" % (site, values))
    if "SUMMARY" not in report:
        failures.append("no final report (cuaudit exit %d): %s" % (run.returncode, stderr[-2000:]))
    for pattern in opts.expect_in_report:
        if not re.search(pattern, report, re.M):
            failures.append("the final report does not match %r" % pattern)
    if failures:
        print("FAIL metrics on %s:\n  %s" % (" ".join(opts.program), "\n  ".join(failures)))
        return 1
    for pattern in opts.expect_in_report:
        print("  report: " + re.search(pattern, report, re.M).group(0)[:200])
    print("PASS metrics on %s: %s rose over %d scrapes (%.1f -> %.1f MiB); cuaudit exit %d" % (
        " ".join(os.path.basename(p) for p in opts.program), site, len(values), values[0] / 2**20, values[-1] / 2**20, run.returncode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
