#!/usr/bin/env python3
"""Hostile and broken input never crashes cuaudit: a recorded command line with invalid UTF-8, an
ANSI escape and a forged report line renders in every format (the text shows them escaped, the
JUnit XML stays valid); broken or crafted JSON reports given to --baseline, diff and merge are
refused with 125 and a message, or read with defaults; a suppression "file" that is a directory is
refused; a run directory with a FIFO or a link to /dev/zero as a trace is reported (incomplete)
without hanging, planted symlinks are replaced, never written through, and an unreadable symbol
cache is left as it is. (Reliability review D2, D3, D5, D9, D13, D14, D15 and its suppression case.)"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from golden_run import finish


def patch_command_line(trace, payload):
    """Overwrites the start of the recorded argv (ProcessInfo record's tail) with `payload`."""
    data = bytearray(open(trace, "rb").read())
    pos = struct.unpack_from("<I", data, 12)[0]  # FileHeader::header_size
    while pos + 16 <= len(data):
        _, payload_bytes, _, _ = struct.unpack_from("<IIII", data, pos)
        r = pos + 16
        while r + 8 <= pos + 16 + payload_bytes:
            rtype, size = struct.unpack_from("<HH", data, r)
            if rtype == 1:  # ProcessInfo: 48 fixed bytes, then cmdline_bytes of argv
                cmdline_bytes = struct.unpack_from("<I", data, r + 40)[0]
                assert len(payload) <= cmdline_bytes
                data[r + 48:r + 48 + len(payload)] = payload
                open(trace, "wb").write(bytes(data))
                return
            r += size
        pos += 16 + payload_bytes
    raise RuntimeError("no ProcessInfo record")


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    opts = ap.parse_args()
    c = opts.cuaudit
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, "run")
        shutil.copytree(opts.golden, run_dir)
        trace = next(os.path.join(run_dir, f) for f in os.listdir(run_dir) if f.endswith(".cutrace"))
        patch_command_line(trace, b"\xff\x1b[2J\n==1== SUMMARY")
        out = {k: os.path.join(tmp, "r." + k) for k in ("json", "sarif", "html", "xml", "txt")}
        proc = run([c, "report", run_dir, "--json", out["json"], "--sarif", out["sarif"], "--html", out["html"],
                    "--junit", out["xml"], "--log-file", out["txt"]])
        if proc.returncode != 0:
            failures.append("report with a hostile command line: exit %d: %s" % (proc.returncode, proc.stderr[-300:]))
        else:
            for k in ("json", "sarif"):
                json.load(open(out[k], encoding="utf-8"))
            try:
                ET.parse(out["xml"])
            except ET.ParseError as e:
                failures.append("JUnit XML is invalid: %s" % e)
            text = open(out["txt"], "rb").read()
            if b"\x1b" in text or b"\n==1== SUMMARY" in text:
                failures.append("the text report prints the target's control characters raw")
            if b"\\x1b[2J\\n==1== SUMMARY" not in text:
                failures.append("the text report does not show the escaped command line")
            if b"__CUAUDIT_REPORT_DATA__" in open(out["html"], "rb").read():
                failures.append("the HTML page has no data")
        good = out["json"]
        cases = {
            "minimal": ({"schema": "cuaudit.report.v1"}, 0),
            "findings_not_array": ({"schema": "cuaudit.report.v1", "findings": 5}, 125),
            "kind_a_number": ({"schema": "cuaudit.report.v1", "findings": [{"kind": 5}]}, 125),
            "stack_a_string": ({"schema": "cuaudit.report.v1",
                                "findings": [{"kind": "leak", "severity": "error", "stack": "str"}]}, 125),
            "frame_without_function": ({"schema": "cuaudit.report.v1",
                                        "findings": [{"kind": "leak", "severity": "error", "stack": [{}]}]}, 0),
            "other_schema": ({"schema": "other"}, 125),
        }
        for name, (doc, want) in cases.items():
            path = os.path.join(tmp, name + ".json")
            json.dump(doc, open(path, "w"))
            for cmd in ([c, "diff", path, good], [c, "diff", good, path], [c, "merge", path],
                        [c, "report", run_dir, "--baseline", path]):
                p = run(cmd)
                if p.returncode != want or (want == 125 and b"cuaudit: error:" not in p.stderr):
                    failures.append("%s %s: exit %d, expected %d: %s" % (cmd[1], name, p.returncode, want,
                                                                          p.stderr.decode(errors="replace")[-200:]))
        deep = os.path.join(tmp, "deep.json")
        with open(deep, "w") as f:
            f.write('{"schema": "cuaudit.report.v1", "findings": [{"kind": "leak", "notes": ' + "[" * 100000 +
                    "]" * 100000 + "}]}")
        for cmd in ([c, "merge", deep], [c, "diff", deep, good]):
            p = run(cmd)
            if p.returncode != 125:
                failures.append("%s with 100,000 nested arrays: exit %d, expected 125" % (cmd[1], p.returncode))
        # Files of a received run directory that are not what they claim to be.
        odd = os.path.join(tmp, "odd")
        shutil.copytree(opts.golden, odd)
        os.mkfifo(os.path.join(odd, "trace-2.cutrace"))
        os.symlink("/dev/zero", os.path.join(odd, "trace-3.cutrace"))
        victim = os.path.join(tmp, "victim.txt")
        open(victim, "w").write("mine\n")
        os.remove(os.path.join(odd, "call_sites.json"))
        os.symlink(victim, os.path.join(odd, "call_sites.json"))
        symbols = os.path.join(odd, "symbols.json")
        damaged_cache = open(symbols).read().replace("cuaudit.symbols.v1", "cuaudit.symbols.v9")
        open(symbols, "w").write(damaged_cache)
        try:
            p = subprocess.run([c, "report", odd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            err = p.stderr.decode(errors="replace")
            if p.returncode != 123 or err.count("is not a regular file") < 2:
                failures.append("FIFO and /dev/zero traces: exit %d, expected 123 naming both: %s" % (p.returncode,
                                                                                                      err[-400:]))
            if open(victim).read() != "mine\n":
                failures.append("the report wrote through a planted call_sites.json symlink")
            if open(symbols).read() != damaged_cache or "left unchanged" not in err:
                failures.append("an unreadable symbol cache was overwritten")
        except subprocess.TimeoutExpired:
            failures.append("a FIFO or /dev/zero in the run directory hangs the report")
        p = run([c, "report", run_dir, "--suppressions", tmp])
        if p.returncode != 2 or b"not a regular file" not in p.stderr:
            failures.append("a directory as suppression file: exit %d %s" % (p.returncode, p.stderr[-200:]))
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
