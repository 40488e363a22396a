#!/usr/bin/env python3
"""Counts the records of each type in cuaudit traces (common/trace_format.h: a file header of header_size bytes,
then chunks of a 16-byte header and records that start with {u16 type, u16 size}). With --expect
TYPE=MIN, fails unless every trace of the run holds at least MIN records of that type number
(common/trace_records.inc), and with --version, unless each trace is of that format version."""
import argparse
import collections
import glob
import os
import struct
import sys


def count(path):
    data = open(path, "rb").read()
    if data[:8] != b"CUAUDTRC":
        raise SystemExit("%s is not a cuaudit trace" % path)
    version, header_size = struct.unpack_from("<II", data, 8)
    counts = collections.Counter()
    pos = header_size
    while pos + 16 <= len(data):
        magic, payload, _tid, _checksum = struct.unpack_from("<IIII", data, pos)
        if magic != 0x4B4E4843:
            break
        r, end = pos + 16, min(len(data), pos + 16 + payload)
        while r + 8 <= end:
            rtype, size = struct.unpack_from("<HH", data, r)
            if size < 8:
                break
            counts[rtype] += 1
            r += size
        pos += 16 + payload
    return version, counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--expect", action="append", default=[], help="TYPE=MIN")
    ap.add_argument("--version", type=int)
    opts = ap.parse_args()
    failures = []
    traces = sorted(glob.glob(os.path.join(opts.run_dir, "trace-*.cutrace")))
    if not traces:
        failures.append("no trace in %s" % opts.run_dir)
    for path in traces:
        version, counts = count(path)
        print("%s: version %d, records by type %s" % (os.path.basename(path), version, dict(sorted(counts.items()))))
        if opts.version is not None and version != opts.version:
            failures.append("%s is version %d, not %d" % (path, version, opts.version))
        for want in opts.expect:
            rtype, least = (int(x) for x in want.split("="))
            if counts[rtype] < least:
                failures.append("%s holds %d record(s) of type %d, fewer than %d" % (path, counts[rtype], rtype, least))
    print(("FAIL trace records: " + "; ".join(failures)) if failures else "PASS trace records")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
