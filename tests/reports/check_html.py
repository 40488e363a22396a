#!/usr/bin/env python3
"""Runs check_html.js: the HTML reports of the H200 golden runs (the demo's findings, the
three-phase memory timeline, PyTorch's growth with its cache on) and a 10,000-finding fixture, in Debian's Chromium driven by
playwright-core (from the npm registry, installed into the build directory). Keeps screenshots in
the build directory (the CI artifacts)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from golden_run import report_golden  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--timeline-golden", required=True)
    ap.add_argument("--torch-golden", required=True, help="a PyTorch run recorded on the H200 (its charts' names)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--source", required=True, help="this checkout: the golden runs' sources, mapped into it")
    opts = ap.parse_args()
    # The golden runs were recorded from a checkout at /work/main on the H200: their source lines
    # come from this checkout, wherever it is (only files under --source-root are shown).
    sources = ["--path-map", "/work/main=" + os.path.realpath(opts.source), "--source-root", opts.source]
    if not os.path.exists("/usr/bin/chromium"):
        print("FAIL Chromium is needed for the browser test: apt-get install chromium (scripts/install-deps.sh does)")
        return 1
    modules = os.path.join(opts.work, "browser-test")
    if not os.path.isdir(os.path.join(modules, "node_modules", "playwright-core")):
        os.makedirs(modules, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-save", "--prefix", modules, "playwright-core@1"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        golden_html = os.path.join(tmp, "golden.html")
        proc, _ = report_golden(opts.cuaudit, opts.golden, tmp, "--html", golden_html, *sources)
        timeline_html = os.path.join(tmp, "timeline.html")
        timeline_json = os.path.join(tmp, "timeline.json")
        _, timeline_report = report_golden(opts.cuaudit, opts.timeline_golden, tmp, "--html", timeline_html, *sources)
        with open(timeline_json, "w") as f:
            json.dump(timeline_report, f)
        large_html = os.path.join(tmp, "large.html")
        subprocess.run([opts.fixture, "10000", large_html, "100000"], check=True)
        torch_html = os.path.join(tmp, "torch.html")
        report_golden(opts.cuaudit, opts.torch_golden, tmp, "--html", torch_html)
        pools_html = os.path.join(tmp, "pools.html")
        subprocess.run([opts.fixture, "pools", pools_html], check=True)
        env = dict(os.environ, NODE_PATH=os.path.join(modules, "node_modules"))
        screenshot = os.path.join(opts.work, "html-report-screenshot.png")
        timeline_screenshot = os.path.join(opts.work, "html-timeline-screenshot.png")
        result = subprocess.run(["node", os.path.join(os.path.dirname(__file__), "check_html.js"), golden_html,
                                 large_html, screenshot, timeline_html, timeline_json, timeline_screenshot, pools_html,
                                 os.path.join(opts.work, "html-pools-screenshot.png"), torch_html,
                                 os.path.join(opts.work, "html-torch-screenshot.png")], env=env)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
