#!/usr/bin/env python3
"""--pprof read by its real consumer, `go tool pprof` (Debian's golang-go): on the golden native run the
profile's in-use memory is the leaks the report counts, flat at the function that allocated, pinned host
memory apart by label; on the golden CuPy run a pool's blocks sit under the user's Python line without
the interpreter's frames; `-diff_base` compares two profiles; every sample type is there."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from golden_run import finish, report_golden  # noqa: E402

TYPES = ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "peak_objects", "peak_space"]


def pprof(tmp, *args):
    env = dict(os.environ, PPROF_TMPDIR=tmp, HOME=tmp)
    proc = subprocess.run(["go", "tool", "pprof"] + list(args), capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError("go tool pprof %s: exit %d: %s" % (" ".join(args), proc.returncode, proc.stderr[-500:]))
    return proc.stdout


def raw_samples(text):
    """`-raw`'s samples: the six values of each."""
    section = text.split("Samples:", 1)[1].split("Locations", 1)[0]
    return [[int(v) for v in m.group(1).split()]
            for m in re.finditer(r"^\s+((?:-?\d+\s+){5}-?\d+):(?: \d+)*\s*$", section, re.M)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--python-golden", required=True)
    opts = ap.parse_args()
    if shutil.which("go") is None:
        print("FAIL go is not installed: scripts/install-deps.sh installs Debian's golang-go")
        print("0 passed, 1 failed")
        return 1
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "native.pb.gz")
        _, doc = report_golden(opts.cuaudit, opts.golden, tmp, "--pprof", profile)
        raw = pprof(tmp, "-raw", profile)
        header = next(line for line in raw.splitlines() if "alloc_objects/count" in line)
        if header.replace("[dflt]", "").split() != ["%s/%s" % (t, "count" if t.endswith("objects") else "bytes")
                                                     for t in TYPES]:
            failures.append("sample types: %s" % header)
        samples = raw_samples(raw)
        inuse_bytes = sum(s[3] for s in samples)
        inuse_objects = sum(s[2] for s in samples)
        leaks = doc["summary"]
        if (inuse_bytes, inuse_objects) != (leaks["leaked_bytes"], leaks["leaked_allocations"]):
            failures.append("in use at exit %d bytes in %d, the report's leaks %d in %d" %
                            (inuse_bytes, inuse_objects, leaks["leaked_bytes"], leaks["leaked_allocations"]))
        allocated = sum(s[1] for s in samples)
        if sum(s[0] for s in samples) != doc["processes"][0]["allocations"] or allocated < inuse_bytes:
            failures.append("alloc_objects %d for %d allocations" %
                            (sum(s[0] for s in samples), doc["processes"][0]["allocations"]))
        top = pprof(tmp, "-top", profile)
        first = [line for line in top.splitlines() if re.match(r"^\s+\d", line)][:1]
        if not first or "process_batch" not in first[0] or "File: demo_leaks" not in top:
            failures.append("-top does not lead with process_batch in demo_leaks: %s" % top[:600])
        host = pprof(tmp, "-top", "-tagfocus=memory=host", profile)
        if "upload" not in host or "process_batch" in host:
            failures.append("-tagfocus=memory=host is not upload's pinned buffer alone: %s" % host[-400:])
        peak = pprof(tmp, "-top", "-sample_index=peak_space", profile)
        if "Type: peak_space" not in peak or "upload" not in peak:
            failures.append("-sample_index=peak_space: %s" % peak[:400])
        diff = pprof(tmp, "-top", "-diff_base", profile, profile)
        if not re.search(r"accounting for 0, 0% of|Showing nodes accounting for 0\b", diff):
            failures.append("a profile against itself differs: %s" % diff[:400])

        python_profile = os.path.join(tmp, "python.pb.gz")
        report_golden(opts.cuaudit, opts.python_golden, tmp, "--pprof", python_profile)
        traces = pprof(tmp, "-traces", "-lines", "-sample_index=alloc_space", python_profile)
        pool_trace = [t for t in traces.split("-----------+") if "MemoryPool.malloc" in t and "cupy_pool.py" not in t]
        if pool_trace or "python3.12+" in traces or "_PyEval_EvalFrameDefault" in traces:
            failures.append("the interpreter's frames, or a pool block without its Python line: %s" % traces[:1500])
        lines = pprof(tmp, "-top", "-lines", "-cum", "-sample_index=alloc_space", python_profile)
        if "cupy_pool.py:" not in lines:
            failures.append("-lines does not name the user's Python line: %s" % lines[:800])
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
