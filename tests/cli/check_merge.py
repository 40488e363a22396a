#!/usr/bin/env python3
"""cuaudit merge: two ranks' reports of the same bug become one finding listing both ranks, with
the counts added; a different bug stays apart. Uses the golden run as both ranks' source."""
import json
import xml.etree.ElementTree as ET
import os
import subprocess
import sys
import tempfile

from golden_run import checker_arguments, finish, report_golden


def main():
    opts = checker_arguments()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        reports = []
        for rank in range(2):
            _, doc = report_golden(opts.cuaudit, opts.golden, tmp)
            out = os.path.join(tmp, "rank-%d.json" % rank)
            json.dump(doc, open(out, "w"))
            reports.append(out)
        # Rank 1 also has a bug rank 0 does not have.
        doc = json.load(open(reports[1]))
        extra = json.loads(json.dumps(doc["findings"][0]))
        extra["api"] = "cudaMallocManaged"
        doc["findings"].append(extra)
        json.dump(doc, open(reports[1], "w"))
        merged_path = os.path.join(tmp, "merged.json")
        sarif_path = os.path.join(tmp, "m.sarif")
        junit_path = os.path.join(tmp, "m.xml")
        html_path = os.path.join(tmp, "m.html")
        proc = subprocess.run([opts.cuaudit, "merge", reports[0], reports[1], "--json", merged_path,
                               "--sarif", sarif_path, "--junit", junit_path, "--html", html_path,
                               "--error-exitcode", "5"], stderr=subprocess.PIPE, text=True)
        print(proc.stderr, end="")
        merged = json.load(open(merged_path))
        single = json.load(open(reports[0]))
        # The merged report is a report like any other: every format renders it.
        sarif = json.load(open(sarif_path))
        if len(sarif["runs"][0]["results"]) != len(merged["findings"]):
            failures.append("SARIF of the merge has %d results for %d findings"
                            % (len(sarif["runs"][0]["results"]), len(merged["findings"])))
        suites = ET.parse(junit_path).getroot().findall("testsuite")
        if len(suites) != 2:
            failures.append("JUnit of the merge has %d test suites, expected one per rank's process" % len(suites))
        html = open(html_path).read()
        if "cudaMallocManaged" not in html or "__CUAUDIT_REPORT_DATA__" in html:
            failures.append("the HTML page of the merge does not hold the merged findings")
        # -q: the merged leaks are errors, so the summary stays; a clean merge says nothing.
        quiet = subprocess.run([opts.cuaudit, "merge", "-q", reports[0], reports[1]], stderr=subprocess.PIPE, text=True)
        if "LEAK SUMMARY" not in quiet.stderr and "error" not in quiet.stderr:
            failures.append("merge -q hid a report with errors: %s" % quiet.stderr[:300])
        clean = json.load(open(reports[0]))
        clean["findings"] = []
        clean_path = os.path.join(tmp, "clean.json")
        json.dump(clean, open(clean_path, "w"))
        quiet = subprocess.run([opts.cuaudit, "merge", "-q", clean_path, clean_path], stderr=subprocess.PIPE, text=True)
        if quiet.returncode != 0 or quiet.stderr.strip():
            failures.append("merge -q of clean reports: exit %d, %s" % (quiet.returncode, quiet.stderr[:300]))
    if proc.returncode != 5:
        failures.append("exit status %d, expected 5 (--error-exitcode)" % proc.returncode)
    if len(merged["processes"]) != 2 or [p["rank"] for p in merged["processes"]] != [0, 1]:
        failures.append("processes not listed per rank")
    if len(merged["findings"]) != len(single["findings"]) + 1:
        failures.append("%d merged findings, expected %d" % (len(merged["findings"]), len(single["findings"]) + 1))
    for f, one in zip(merged["findings"], single["findings"]):
        if f["ranks"] != [0, 1] or f["count"] != 2 * one["count"] or f["bytes"] != 2 * one["bytes"]:
            failures.append("finding %s %s not merged across ranks: %s" % (f["kind"], f["api"], f["ranks"]))
    if merged["findings"][-1]["ranks"] != [1]:
        failures.append("the bug of rank 1 alone lists ranks %s" % merged["findings"][-1]["ranks"])
    if merged["summary"]["leaked_bytes"] != 2 * single["summary"]["leaked_bytes"] + single["findings"][0]["bytes"]:
        failures.append("summary leaked_bytes %d is not the sum" % merged["summary"]["leaked_bytes"])
    bad = subprocess.run([opts.cuaudit, "merge", "/nonexistent.json"], stderr=subprocess.PIPE, text=True)
    if bad.returncode != 2 or "cannot read" not in bad.stderr:
        failures.append("a missing input is not refused clearly: %d %s" % (bad.returncode, bad.stderr))
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
