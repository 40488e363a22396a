#!/usr/bin/env python3
"""Baselines on a run recorded on the H200: findings already in the baseline do not fail the gate,
a new one does, fixed ones are listed; matching ignores addresses and line numbers. `cuaudit diff`
prints the same comparison, and which sites hold more or less at the peak than before."""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

from golden_run import finish, report_golden


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    opts = ap.parse_args()
    cu = opts.cuaudit
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        _, doc = report_golden(cu, opts.golden, tmp)
        full = os.path.join(tmp, "full.json")
        json.dump(doc, open(full, "w"))

        def report_against(baseline_doc):
            path = os.path.join(tmp, "baseline.json")
            json.dump(baseline_doc, open(path, "w"))
            return report_golden(cu, opts.golden, tmp, "--baseline", path, "--error-exitcode", "3")

        # Recompiled and edited elsewhere: other addresses and line numbers, same bugs.
        moved = copy.deepcopy(doc)
        for f in moved["findings"]:
            for frame in f["stack"]:
                frame["pc"] = "0x1234"
                frame["line"] = (frame["line"] or 0) + 7
        proc, now = report_against(moved)
        if proc.returncode != 0 or [f["baseline"] for f in now["findings"]] != ["still_present"] * 2:
            failures.append("known findings gate or are not matched (exit %d)" % proc.returncode)
        if now["summary"]["errors"] != 0 or now["baseline"]["still_present"] != 2:
            failures.append("summary with baseline: %s %s" % (now["summary"], now["baseline"]))

        # The baseline lacks the cudaMalloc leak: it is new and fails the gate, alone.
        older = copy.deepcopy(doc)
        older["findings"] = [f for f in older["findings"] if f["api"] != "cudaMalloc"]
        fixed_bug = copy.deepcopy(doc["findings"][0])
        fixed_bug["stack"][0]["function"] = "old_bug_since_fixed"
        older["findings"].append(fixed_bug)
        proc, now = report_against(older)
        status = {f["api"]: f["baseline"] for f in now["findings"]}
        if proc.returncode != 3 or status != {"cudaMalloc": "new", "cudaMallocHost": "still_present"}:
            failures.append("a new leak must fail the gate alone: exit %d, %s" % (proc.returncode, status))
        if now["summary"]["errors"] != 1 or len(now["baseline"]["fixed"]) != 1 or \
                "old_bug_since_fixed" not in now["baseline"]["fixed"][0]:
            failures.append("new/fixed accounting: %s" % now["baseline"])
        if "[new] Leak of 327680" not in proc.stderr or "fixed: leak cudaMalloc at old_bug_since_fixed" not in proc.stderr:
            failures.append("the text report does not mark new and fixed findings")

        old_path = os.path.join(tmp, "baseline.json")
        diff = subprocess.run([cu, "diff", old_path, full, "--error-exitcode", "4"], stderr=subprocess.PIPE, text=True)
        if diff.returncode != 4 or "1 new finding(s)" not in diff.stderr or "1 fixed" not in diff.stderr:
            failures.append("cuaudit diff: exit %d\n%s" % (diff.returncode, diff.stderr))
        # The same comparison as JSON, on standard output: what the text says, in fields.
        diff = subprocess.run([cu, "diff", old_path, full, "--json", "-", "--error-exitcode", "4"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            d = json.loads(diff.stdout)
            shape = (d["schema"], [f["api"] for f in d["new"]], [f["api"] for f in d["still_present"]],
                     len(d["fixed"]), "old_bug_since_fixed" in d["fixed"][0], d["after"]["report"] == full)
        except (ValueError, KeyError, IndexError) as e:
            shape = repr(e)
        if diff.returncode != 4 or shape != ("cuaudit.diff.v1", ["cudaMalloc"], ["cudaMallocHost"], 1, True, True):
            failures.append("cuaudit diff --json -: exit %d, %s\n%s" % (diff.returncode, shape, diff.stderr))

        # Peak memory by site: the same run with its peak site holding half as much before.
        smaller = copy.deepcopy(doc)
        peak = smaller["timeline"]["peaks"][0]
        peak["sites"][0]["bytes"] //= 2
        peak["used"] -= peak["sites"][0]["bytes"]
        peak["tracked"] -= peak["sites"][0]["bytes"]
        smaller_path = os.path.join(tmp, "smaller-peak.json")
        json.dump(smaller, open(smaller_path, "w"))
        diff = subprocess.run([cu, "diff", smaller_path, full], stderr=subprocess.PIPE, text=True)
        if "peak on device 0: " not in diff.stderr or \
                "+8.0 KiB at upload demo_leaks.cu:28 (cudaMalloc): 16.0 KiB at the peak, was 8.0 KiB" not in diff.stderr:
            failures.append("cuaudit diff does not say which site holds more at the peak:\n%s" % diff.stderr)
        diff_json = os.path.join(tmp, "diff.json")
        subprocess.run([cu, "diff", smaller_path, full, "--json", diff_json], stderr=subprocess.PIPE, check=True)
        d = json.load(open(diff_json))
        site = next((s for p in d["peaks"] for s in p["sites"] if s["site"] == "upload demo_leaks.cu:28"), None)
        if not site or (site["before"], site["after"], site["change"], site["api"]) != (8192, 16384, 8192, "cudaMalloc") \
                or d["peaks"][0]["used_change"] != 8192:
            failures.append("cuaudit diff --json does not hold the peak's site change: %s" % d["peaks"])
        diff = subprocess.run([cu, "diff", full, full], stderr=subprocess.PIPE, text=True)
        if "no site holds more or less at the peak than before" not in diff.stderr:
            failures.append("cuaudit diff of a report with itself shows peak changes:\n%s" % diff.stderr)

        bad, _ = report_golden(cu, opts.golden, tmp, "--baseline", "/nonexistent.json")
        if bad.returncode != 2 or "--baseline" not in bad.stderr:
            failures.append("a missing baseline is not refused clearly")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
