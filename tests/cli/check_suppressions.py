#!/usr/bin/env python3
"""Suppressions on a run recorded on the H200: a rule silences exactly what it names, the table
shows its hits and bytes, suppressed findings stay in the JSON, only unsuppressed errors gate, and
a rule printed by --gen-suppressions silences its finding, and the allow-list (--keep-only,
keep:PATTERN) reports only what goes through the code it names."""
import os
import sys
import tempfile

from golden_run import checker_arguments, finish, report_golden


def report(cuaudit, golden, tmp, *args):
    return report_golden(cuaudit, golden, tmp, "--error-exitcode", "3", *args)


def main():
    opts = checker_arguments()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        supp = os.path.join(tmp, "app.supp")
        open(supp, "w").write("# the staging buffer is a known issue (ticket 42)\nleak:upload\n")
        proc, doc = report(opts.cuaudit, opts.golden, tmp, "--suppressions", supp)
        by_api = {f["api"]: f for f in doc["findings"]}
        if not by_api["cudaMallocHost"]["suppressed"] or by_api["cudaMalloc"]["suppressed"]:
            failures.append("leak:upload must silence the cudaMallocHost leak and only it")
        if doc["suppressions"] != [{"rule": "leak:upload", "file": supp, "line": 2, "hits": 1, "bytes": 16384}]:
            failures.append("suppression table: %s" % doc["suppressions"])
        if "Suppressions used:" not in proc.stderr:
            failures.append("the text report has no 'Suppressions used:' table")
        if proc.returncode != 3:
            failures.append("the cudaMalloc leak still gates: exit %d, expected 3" % proc.returncode)

        proc, _ = report(opts.cuaudit, opts.golden, tmp, "--gen-suppressions")
        rules = [l.split("suppression: ", 1)[1] for l in proc.stderr.splitlines() if "suppression: " in l]
        if len(rules) != 2:
            failures.append("--gen-suppressions printed %d rules, expected 2" % len(rules))
        else:
            open(supp, "w").write("\n".join(rules) + "\n")
            proc, doc = report(opts.cuaudit, opts.golden, tmp, "--suppressions", supp)
            if not all(f["suppressed"] for f in doc["findings"]) or proc.returncode != 0:
                failures.append("the generated rules did not silence their findings (exit %d)" % proc.returncode)

        # The allow-list: only what goes through the named code is reported, the rest suppressed.
        proc, doc = report(opts.cuaudit, opts.golden, tmp, "--keep-only", "upload")
        by_api = {f["api"]: f for f in doc["findings"]}
        if by_api["cudaMallocHost"]["suppressed"] or not by_api["cudaMalloc"]["suppressed"]:
            failures.append("--keep-only upload must keep the upload leak and suppress the other")
        if doc["suppressions"] != [{"rule": "keep:upload", "file": "--keep-only", "line": 0, "hits": 1, "bytes": 16384},
                                   {"rule": "(through no keep: rule)", "file": "", "line": 0, "hits": 1, "bytes": 327680}]:
            failures.append("--keep-only's table: %s" % doc["suppressions"])
        if proc.returncode != 3 or "(through no keep: rule)" not in proc.stderr:
            failures.append("--keep-only upload: exit %d (expected 3: the kept leak gates), or no table line" % proc.returncode)
        open(supp, "w").write("keep:process_batch\nleak:nothing-matches-this\n")
        proc, doc = report(opts.cuaudit, opts.golden, tmp, "--suppressions", supp)
        kept = [f["api"] for f in doc["findings"] if not f["suppressed"]]
        if kept != ["cudaMalloc"]:
            failures.append("keep:process_batch in a file kept %s, expected only the cudaMalloc leak" % kept)
        proc, doc = report(opts.cuaudit, opts.golden, tmp, "--keep-only", "no-such-code", "--leak-check", "full")
        if proc.returncode != 0 or any(not f["suppressed"] for f in doc["findings"]):
            failures.append("--keep-only with no match still gates (exit %d)" % proc.returncode)

        open(supp, "w").write("leak:fine\nleek:typo\n")
        proc, _ = report(opts.cuaudit, opts.golden, tmp, "--suppressions", supp)
        if proc.returncode != 2 or "app.supp:2" not in proc.stderr:
            failures.append("a bad rule is not refused with file:line (exit %d: %s)" % (proc.returncode, proc.stderr))
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
