#!/usr/bin/env python3
"""`cuaudit --metrics` end to end with real parts: service_standin (the real recorder, no CUDA)
runs under the real launcher while a real Prometheus server scrapes cuaudit every second. Then
Prometheus' HTTP API must show the growing site's series rising at its line and the arena's
fragmentation ratio (with --mode watch: estimated from sampled stacks, close to the exact live
bytes); a scrape of our own must pass `promtool check metrics` in both formats;
--metrics-file must hold the final figures; and `promtool test rules` must pass the documented
alerting rules (docs/cuaudit-alerts.yml) on recorded series."""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def marker_line(source, name):
    return next(n for n, text in enumerate(open(source), start=1) if re.search(r"//\s*@%s\b" % name, text))


def get(url, accept=None, timeout=5):
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.headers.get("Content-Type", ""), answer.read().decode()


def promtool_check(text, what, failures):
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    if proc.returncode != 0:
        failures.append("promtool check metrics (%s): %s%s" % (what, proc.stdout, proc.stderr))


def query_range(prometheus, query, start, end):
    args = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": "1"})
    _, body = get("http://127.0.0.1:%d/api/v1/query_range?%s" % (prometheus, args))
    return json.loads(body)["data"]["result"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--service", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--rules", required=True)
    ap.add_argument("--rules-test", required=True)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--mode", choices=("check", "watch"), default="check")
    opts = ap.parse_args()
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            print("FAIL: %s is not installed (Debian's prometheus package: scripts/install-deps.sh)" % tool)
            return 1
    failures = []
    grow_line = marker_line(opts.source, "grow")
    with tempfile.TemporaryDirectory() as tmp:
        # The documented rules, checked on recorded series first (no server needed).
        shutil.copy(opts.rules, os.path.join(tmp, "cuaudit-alerts.yml"))
        shutil.copy(opts.rules_test, os.path.join(tmp, "alerts_test.yml"))
        proc = subprocess.run(["promtool", "test", "rules", "alerts_test.yml"], cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            failures.append("promtool test rules: " + proc.stdout + proc.stderr)

        port, prometheus_port = free_port(), free_port()
        with open(os.path.join(tmp, "prometheus.yml"), "w") as config:
            config.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                         "  - job_name: cuaudit\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % port)
        server = subprocess.Popen(["prometheus", "--config.file", os.path.join(tmp, "prometheus.yml"),
                                   "--storage.tsdb.path", os.path.join(tmp, "tsdb"),
                                   "--web.listen-address", "127.0.0.1:%d" % prometheus_port],
                                  stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "prometheus.log"), "w"))
        try:
            ready_by = time.time() + 60
            while time.time() < ready_by:
                try:
                    get("http://127.0.0.1:%d/-/ready" % prometheus_port, timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            metrics_file = os.path.join(tmp, "cuaudit.prom")
            # Watch mode compacts the trace as it grows (every 8 KiB here, a few times a run): the
            # series, the counters and the final report must not notice.
            run_dir = os.path.join(tmp, "run")
            compaction = ["--trace-compact-bytes", "8K", "--save", run_dir] if opts.mode == "watch" else []
            start = time.time()
            run = subprocess.Popen([opts.cuaudit, "--mode", opts.mode, "--require-cuda-init", "no"] + compaction +
                                   ["--log-file", os.path.join(tmp, "report.txt"),
                                    "--metrics", "127.0.0.1:%d" % port, "--metrics-interval", "1s",
                                    "--metrics-file", metrics_file, "--", opts.service, str(opts.seconds)],
                                   stderr=subprocess.PIPE, text=True)
            # While it runs: our own scrape in the text format 0.0.4 must pass promtool (which reads
            # only that format); the OpenMetrics one is what Prometheus itself asks for and parses.
            time.sleep(opts.seconds / 2)
            try:
                _, text = get("http://127.0.0.1:%d/metrics" % port)
                promtool_check(text, "text format 0.0.4", failures)
                content_type, text = get("http://127.0.0.1:%d/metrics" % port, "application/openmetrics-text; version=1.0.0")
                if not (content_type.startswith("application/openmetrics-text") and text.endswith("# EOF\n")):
                    failures.append("an OpenMetrics scrape got %r, ending %r" % (content_type, text[-20:]))
            except OSError as e:
                failures.append("scraping cuaudit: %s" % e)
            _, stderr = run.communicate(timeout=opts.seconds + 60)
            end = time.time()
            if "metrics at http://127.0.0.1:%d/metrics" % port not in stderr:
                failures.append("cuaudit did not say where its metrics are: " + stderr)
            # What Prometheus scraped while the service ran.
            grow = 'cuaudit_site_live_bytes{site=~".*service_standin.cpp:%d"}' % grow_line
            series = query_range(prometheus_port, grow, start, end)
            if len(series) != 1:
                failures.append("Prometheus has %d series for the growing site at line %d (%s)" % (
                    len(series), grow_line, query_range(prometheus_port, "cuaudit_site_live_bytes", start, end)))
            else:
                values = [float(v) for _, v in series[0]["values"]]
                rises = sum(1 for a, b in zip(values, values[1:]) if b > a)
                if len(set(values)) < 3 or values[-1] <= values[0] or any(b < a for a, b in zip(values, values[1:])):
                    failures.append("the growing site's series did not rise steadily: %s" % values)
                print("growing site (line %d): %d points, %d rises, %.0f -> %.0f bytes" % (
                    grow_line, len(values), rises, values[0], values[-1]))
            # A counter never goes down, compacted trace or not.
            counted = query_range(prometheus_port, "cuaudit_allocations_total", start, end)
            counts = [float(v) for _, v in counted[0]["values"]] if counted else []
            if len(counts) < 3 or any(b < a for a, b in zip(counts, counts[1:])):
                failures.append("cuaudit_allocations_total went down or was not scraped: %s" % counts)
            ratio = query_range(prometheus_port, 'cuaudit_pool_fragmentation_ratio{pool=~".*request arena.*"}', start, end)
            if not ratio or abs(float(ratio[0]["values"][-1][1]) - 0.96875) > 1e-6:
                failures.append("the arena's fragmentation ratio is not 1 - 1 MiB / 32 MiB: %s" % ratio)
            # Prometheus asks for OpenMetrics first: its own parser took every scrape that counted.
            scrapes = query_range(prometheus_port, 'scrape_samples_scraped{job="cuaudit"}', start, end)
            if not scrapes or not any(float(v) > 20 for _, v in scrapes[0]["values"]):
                failures.append("Prometheus never scraped cuaudit's samples: %s" % scrapes)
        finally:
            server.terminate()
            server.wait(timeout=30)
        # A program that records nothing for a while (a Python job still importing) is no error
        # at each refresh: the families stay empty until its first trace.
        quiet = subprocess.run([opts.cuaudit, "--require-cuda-init", "no", "--metrics", "127.0.0.1:0",
                                "--metrics-interval", "200ms", "--", "sleep", "1"], capture_output=True, text=True)
        if "not refreshed" in quiet.stderr or "metrics at http://127.0.0.1:" not in quiet.stderr:
            failures.append("a program that recorded nothing yet: %s" % quiet.stderr)
        if opts.mode == "watch":
            report = open(os.path.join(tmp, "report.txt")).read()
            compactions = re.search(r"its trace was compacted (\d+) time", report)
            compacted = [n for n in os.listdir(run_dir) if n.startswith("compacted-")]
            if not compactions or int(compactions.group(1)) < 2 or len(compacted) != 1:
                failures.append("the trace was not compacted while the service ran (%s):\n%s" % (compacted, report[:1500]))
            else:
                print("the trace was compacted %s times" % compactions.group(1))
        # The file holds the final report's figures.
        text = open(metrics_file).read() if os.path.exists(metrics_file) else ""
        promtool_check(text, "--metrics-file", failures)
        # Check mode: the growing site and the arena. Watch mode splits the site's leak in two: its
        # sampled allocations, and those whose stacks were not sampled (counted all the same).
        leaks = "2" if opts.mode == "check" else "3"
        final = re.search(r'cuaudit_findings\{kind="leak"\} (\d+)', text)
        if not final or final.group(1) != leaks:
            failures.append("--metrics-file does not count the final report's %s leaks:\n%s" % (leaks, text[:2000]))
        site = re.search(r'cuaudit_site_live_bytes\{[^}]*site="[^"]*service_standin.cpp:%d"[^}]*\} (\d+)' % grow_line, text)
        live = re.search(r'cuaudit_live_bytes\{[^}]*memory="device"\} (\d+)', text)
        if not site or not live:
            failures.append("--metrics-file lacks the growing site or the live device bytes:\n" + text[:3000])
        else:
            estimate, exact = int(site.group(1)), int(live.group(1))
            print("%s mode: the growing site holds %d bytes, the program %d" % (opts.mode, estimate, exact))
            # Exact in check mode; from about 200 samples in watch mode (standard error ~7%).
            if abs(estimate - exact) > (0 if opts.mode == "check" else 0.25 * exact):
                failures.append("the growing site's %d bytes are too far from the %d live" % (estimate, exact))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS: Prometheus scraped cuaudit --metrics; the growing site rose at its line, the arena's "
          "fragmentation was 0.969; promtool passed the exposition and the alerting rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
