#!/usr/bin/env python3
"""Runs and reports received from elsewhere, damaged or crafted, never fool cuaudit (issue 36; the
reliability review of 2026-12-01, defects E2-E18). Each check below failed before its fix. Always
on copies of the golden run (a report rewrites a run directory's caches)."""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

failures = []
passes = []


def check(name, ok, detail=""):
    print("%s %s" % ("PASS" if ok else "FAIL", name))
    (passes if ok else failures).append(name)
    if not ok and detail:
        print("  " + str(detail).replace("\n", "\n  ")[:3000])


def run(cmd, cwd=None, timeout=120):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, 124, e.stdout or b"", (e.stderr or b"") + b"(timed out)")


class Runs:
    def __init__(self, cu, golden, tmp):
        self.cu, self.golden, self.tmp = cu, golden, tmp
        self.count = 0

    def copy(self):
        self.count += 1
        d = os.path.join(self.tmp, "run-%d" % self.count)
        shutil.copytree(self.golden, d)
        return d

    def with_symbols(self, fields):
        """A copy whose every symbol-cache location has `fields` (what a crafted run says)."""
        d = self.copy()
        run([self.cu, "report", d, "--log-file", os.devnull])  # writes symbols.json
        path = os.path.join(d, "symbols.json")
        doc = json.load(open(path))
        for module in doc["modules"].values():
            for entries in module.values():
                for location in entries:
                    location.update(fields)
        json.dump(doc, open(path, "w"))
        return d

    def trace(self, d):
        return next(os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".cutrace"))


def chunks(data):
    """(offset, length) of every chunk after the 24-byte file header."""
    out, pos = [], 24
    while pos + 16 <= len(data):
        n = struct.unpack_from("<I", data, pos + 4)[0]
        out.append((pos, 16 + n))
        pos += 16 + n
    return out


def html_sources(r):
    """E2, E3: the page takes source lines only from where it may, and survives any line number."""
    secret_dir = os.path.join(r.tmp, "home")
    os.makedirs(secret_dir)
    secret = os.path.join(secret_dir, "id_rsa")
    open(secret, "w").write("".join("SECRET-LINE-%d\n" % n for n in range(1, 41)))
    d = r.with_symbols({"file": secret, "line": 4})
    page = os.path.join(r.tmp, "e2.html")
    proc = run([r.cu, "report", d, "--html", page], cwd=secret_dir)
    text = open(page).read() if os.path.exists(page) else ""
    check("E2: a received run's frames naming a file under the working directory put none of it in the page",
          proc.returncode == 0 and "SECRET-LINE" not in text, proc.stderr.decode()[-1500:])
    check("E2: ... and cuaudit says how to get source lines", b"--source-root" in proc.stderr, proc.stderr.decode())
    proc = run([r.cu, "report", d, "--html", page, "--source-root", secret_dir], cwd=secret_dir)
    check("E2: an explicit --source-root shows the lines under it",
          "SECRET-LINE-4" in open(page).read(), proc.stderr.decode()[-1500:])

    d = r.with_symbols({"line": 2147483644})
    page = os.path.join(r.tmp, "e3.html")
    proc = run([r.cu, "report", d, "--html", page, "--source-root", r.tmp], timeout=60)
    check("E3: a frame line near INT_MAX: --html ends at once", proc.returncode == 0 and os.path.exists(page),
          "exit %d %s" % (proc.returncode, proc.stderr.decode()[-800:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    opts = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cuaudit-received-")
    try:
        r = Runs(os.path.abspath(opts.cuaudit), os.path.abspath(opts.golden), tmp)
        html_sources(r)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (len(passes), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
