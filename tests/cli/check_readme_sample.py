#!/usr/bin/env python3
"""The README's sample output is what `cuaudit report` prints for the golden demo run today."""
import argparse
import re
import subprocess
import sys
import tempfile

from golden_run import report_golden


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--readme", required=True)
    opts = ap.parse_args()
    readme = open(opts.readme).read()
    # The first fenced block whose lines are the report's (==PID== ...).
    blocks = re.findall(r"```\n((?:==\d+==.*\n)+)```", readme)
    if not blocks:
        print("FAIL README.md has no sample report block")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        proc, _ = report_golden(opts.cuaudit, opts.golden, tmp)
    if proc.stderr != blocks[0]:
        print("FAIL README.md's sample differs from what cuaudit prints now; replace it with:\n" + proc.stderr)
        return 1
    print("PASS README.md's sample output is what cuaudit prints")
    return 0


if __name__ == "__main__":
    sys.exit(main())
