#!/usr/bin/env python3
"""A stack overflow in a PyTorch process with faulthandler enabled: faulthandler's handler (on its
alternate stack) still prints its report under cuaudit, the process dies of SIGSEGV as it would have,
and cuaudit's report says so (reliability review D11a)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    opts = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        alone = subprocess.run([sys.executable, opts.script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=240)
        proc = subprocess.run([opts.cuaudit, "--json", out, sys.executable, opts.script], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=240)
        with open(opts.log, "a") as log:
            log.write("without cuaudit: exit %d\n%s\nunder cuaudit: exit %d\n%s\n" % (alone.returncode, alone.stdout[-2000:],
                                                                                    proc.returncode, proc.stdout[-4000:]))
        report = json.load(open(out)) if os.path.exists(out) else None
    print("without cuaudit: exit %d, faulthandler printed: %s" % (alone.returncode, "Fatal Python error" in alone.stdout))
    print("under cuaudit:   exit %d, faulthandler printed: %s" % (proc.returncode, "Fatal Python error" in proc.stdout))
    if "Fatal Python error" not in proc.stdout:
        failures.append("faulthandler's report is missing under cuaudit")
    if proc.returncode != 139:
        failures.append("cuaudit exited %d, expected 139 (the program's SIGSEGV)" % proc.returncode)
    if not report:
        failures.append("no JSON report")
    else:
        p = report["processes"][0]
        notes = " ".join(p["notes"])
        print("report: signal %s, tracked %s, notes: %s" % (p["signal"], p["tracked"], notes[:160]))
        if p["signal"] != "SIGSEGV" or "received SIGSEGV" not in notes:
            failures.append("the report does not say the process received SIGSEGV")
    if failures:
        print("FAIL faulthandler:\n  " + "\n  ".join(failures))
        return 1
    print("PASS faulthandler: its handler ran on its alternate stack under cuaudit; the report names SIGSEGV")
    return 0


if __name__ == "__main__":
    sys.exit(main())
