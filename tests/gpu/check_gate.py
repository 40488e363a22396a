#!/usr/bin/env python3
"""The CI gate on a live GPU run of gate_program.cu: a suppression file silences exactly the leak it
names, with the "Suppressions used" table; a baseline of the first run passes the gate on the same
program and fails it only when the new leak (--new-leak) appears."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def marker(source, name):
    return next(n for n, text in enumerate(open(source), start=1)
                if "EXPECT" not in text and re.search(r"//.*%s\s*$" % name, text))


def run(opts, tmp, args, program_args=()):
    out = os.path.join(tmp, "report.json")
    cmd = [opts.cuaudit, "--json", out, "--error-exitcode", "9"] + args + [opts.program] + list(program_args)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if opts.log:
        with open(opts.log, "a") as log:
            log.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr + "exit %d\n\n" % proc.returncode)
    return proc, json.load(open(out))


def top_line(finding):
    return finding["stack"][0].get("line") if finding["stack"] else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--log")
    opts = ap.parse_args()
    cache, scratch, added = (marker(opts.source, m) for m in ("@cache", "@scratch", "@added"))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = run(opts, tmp, [])
        baseline = os.path.join(tmp, "baseline.json")
        json.dump(base, open(baseline, "w"))
        if proc.returncode != 9 or len(base["findings"]) != 2:
            failures.append("first run: exit %d with %d findings, expected 9 with 2" % (proc.returncode, len(base["findings"])))

        supp = os.path.join(tmp, "gate.supp")
        with open(supp, "w") as f:
            f.write("# the cache is released by the OS at exit on purpose\nleak:cache_buffer\n")
        proc, doc = run(opts, tmp, ["--suppressions", supp])
        suppressed = [top_line(f) for f in doc["findings"] if f["suppressed"]]
        active = [top_line(f) for f in doc["findings"] if not f["suppressed"]]
        table = doc["suppressions"]
        print("suppressions: suppressed at lines %s, still reported at %s, table %s, exit %d" % (
            suppressed, active, [(u["rule"], u["hits"], u["bytes"]) for u in table], proc.returncode))
        if suppressed != [cache] or active != [scratch]:
            failures.append("the suppression did not silence exactly the leak at line %d" % cache)
        if [(u["rule"], u["hits"], u["bytes"]) for u in table] != [("leak:cache_buffer", 1, 4096)]:
            failures.append("the Suppressions used table is not one hit of 4096 bytes for leak:cache_buffer")
        if "Suppressions used" not in proc.stderr or proc.returncode != 9:
            failures.append("the text report shows no Suppressions used table, or the gate did not fail on the rest")

        proc, doc = run(opts, tmp, ["--baseline", baseline])
        print("baseline, same program: exit %d, %s" % (proc.returncode, [f["baseline"] for f in doc["findings"]]))
        if proc.returncode != 0 or any(f["baseline"] != "still_present" for f in doc["findings"]):
            failures.append("against its own baseline the program did not pass the gate")
        proc, doc = run(opts, tmp, ["--baseline", baseline], ["--new-leak"])
        new = [top_line(f) for f in doc["findings"] if f["baseline"] == "new"]
        print("baseline, with the new leak: exit %d, new at lines %s" % (proc.returncode, new))
        if proc.returncode != 9 or new != [added]:
            failures.append("with --new-leak the gate did not fail on exactly the new leak at line %d" % added)
    if failures:
        print("FAIL gate:\n  " + "\n  ".join(failures))
        return 1
    print("PASS gate: the suppression silenced exactly its leak (table shown); the baseline failed only on the new leak")
    return 0


if __name__ == "__main__":
    sys.exit(main())
