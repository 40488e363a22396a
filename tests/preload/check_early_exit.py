#!/usr/bin/env python3
"""exit() called by a library constructor before libcuaudit-preload.so's constructor: the process
ends as it would without cuaudit: status 7, its atexit handler ran, its buffered output flushed
(reliability review D11b)."""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", required=True)
    ap.add_argument("--preload", required=True)
    opts = ap.parse_args()
    alone = subprocess.run([opts.program], stdout=subprocess.PIPE, text=True)
    under = subprocess.run([opts.program], stdout=subprocess.PIPE, text=True,
                           env=dict(os.environ, LD_PRELOAD=opts.preload))
    want = "buffered output from a library constructor\natexit handler ran\n"
    ok = alone.returncode == 7 and under.returncode == 7 and under.stdout == want
    print("%s early exit: alone %d %r; preloaded %d %r" % ("PASS" if ok else "FAIL", alone.returncode, alone.stdout,
                                                          under.returncode, under.stdout))
    print("%d passed, %d failed" % (int(ok), int(not ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
