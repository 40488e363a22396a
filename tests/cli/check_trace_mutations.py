#!/usr/bin/env python3
"""The silent class (issue 54): a golden trace changed in one field, one chunk or one copy
(trace_mutations.py: the reliability review's classes) must give the intact report, or one marked
incomplete (exit 123, "incomplete": true) with a note, or be refused (exit 125 with a message);
never a different report that says it is complete.

  check_trace_mutations.py CUAUDIT GOLDEN_DIR [--runs RUN ...] [--sample N] [--seed S]

--sample N checks N cases of each class, chosen by --seed (CI: a few hundred cases in about a
minute); without it every case of every run (the campaign in docs/TESTING.md). Traces of format
version 1 carry no checksums and are left out: a flipped byte there cannot be told.

One residual, counted apart and not failed: in a trace of a version before 7, whose checksums do not
say which file a chunk belongs to, a chunk of another trace whose sequence numbers, times and stacks
all fit this one (memory samples of another run, say) reads as the process's own. Version 7 seals
each chunk's checksum with its file's identity, and the "@v7" runs hold no such residual."""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_mutations as tm  # noqa: E402

# Golden runs of one process with checksummed traces ("@v7": a version-6 golden framed as version 7
# writes it, its chunks sealed), and the run whose chunks are transplanted.
DEFAULT_RUNS = ["demo-v7-run", "watch-sampled-run@v7", "watch-torch-run@v7", "cupy-grow-run", "torch-cap-run", "jax-growth-run",
                "managed-ping-pong-run", "nvtx-pool-run", "fragmenting-pool-run", "kernel-access-run"]
FOREIGN_RUN = "cupy-fragmentation-run"


def report(cu, run_dir, out):
    proc = subprocess.run([cu, "report", run_dir, "--json", out, "--log-file", os.devnull],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    doc = None
    if os.path.exists(out):
        try:
            doc = json.load(open(out))
        except ValueError:
            doc = None
    return proc.returncode, doc, proc.stderr.decode(errors="replace")


def comparable(doc):
    """What a report says of the program: findings, summary, processes and timeline, without the names
    of the run's directory and files (which differ between copies)."""
    doc = dict(doc)
    doc.pop("tool", None)
    doc.pop("options", None)
    for p in doc.get("processes", []):
        p.pop("file", None)
    return json.dumps(doc, sort_keys=True)


def said(doc):
    notes = list(doc.get("notes", []))
    for p in doc.get("processes", []):
        notes += p.get("notes", []) + p.get("problems", [])
    return doc.get("incomplete") is True and bool(notes)


def judge(cu, work, golden_run, files, intact):
    """'same', 'said', 'refused' or 'SILENT: ...' for one case."""
    d = os.path.join(work, "case")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(golden_run, d, ignore=shutil.ignore_patterns("*.cutrace"))
    for name, data in files.items():
        open(os.path.join(d, name), "wb").write(data)
    out = os.path.join(work, "case.json")
    if os.path.exists(out):
        os.remove(out)
    rc, doc, err = report(cu, d, out)
    if rc == 125 and err.strip():
        return "refused"
    if doc is None:
        return "SILENT: exit %d without a report: %s" % (rc, err.strip()[:300])
    if rc == 123 and said(doc):
        return "said"
    if comparable(doc) == intact and rc == 0:
        return "same"
    if said(doc):
        return "SILENT: incomplete and said, but exit %d" % rc
    return "SILENT: exit %d, complete, the report differs (%d findings, summary %s)" % (
        rc, len(doc.get("findings", [])), json.dumps(doc.get("summary")))


def cases_of(golden, run, foreign):
    """The golden run's directory, its trace's name and bytes, and every case."""
    d = os.path.join(golden, run.split("@")[0])
    name = next(f for f in sorted(os.listdir(d)) if f.endswith(".cutrace"))
    t = tm.Trace(open(os.path.join(d, name), "rb").read())
    base = {}  # files every case of the run shares
    if run.endswith("@v7"):
        t = tm.as_version_7(t)
        info = json.load(open(os.path.join(d, "run.json")))
        if "trace_bytes" in info:  # the launcher's note of the trace's size: the framed one's
            info["trace_bytes"] = {pid: len(t.data) for pid in info["trace_bytes"]}
        base["run.json"] = json.dumps(info).encode()
    if t.version < 2:
        return d, name, t, base, []
    single = [tm.header_cases(t), tm.chunk_header_cases(t), tm.cut_cases(t), tm.repeat_cases(t),
              tm.foreign_cases(t, foreign), tm.reorder_cases(t), tm.v1_flip_cases(t)]
    out = [(cls, desc, dict(base, **{name: data})) for gen in single for cls, desc, data in gen]
    out += [(cls, desc, dict(base, **files)) for cls, desc, files in tm.copy_cases(t, name)]
    return d, name, t, base, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cuaudit")
    ap.add_argument("golden")
    ap.add_argument("--runs", nargs="*", default=DEFAULT_RUNS)
    ap.add_argument("--sample", type=int, default=0, help="cases of each class per run (0: all)")
    ap.add_argument("--seed", type=int, default=54)
    args = ap.parse_args()
    fdir = os.path.join(args.golden, FOREIGN_RUN)
    foreign = tm.Trace(open(os.path.join(fdir, next(f for f in os.listdir(fdir) if f.endswith(".cutrace"))), "rb").read())
    rng = random.Random(args.seed)
    tally = {}
    silent = []
    with tempfile.TemporaryDirectory() as work:
        for run in args.runs:
            golden_run, name, trace, base, cases = cases_of(args.golden, run, foreign)
            intact_dir = os.path.join(work, "intact")
            shutil.rmtree(intact_dir, ignore_errors=True)
            shutil.copytree(golden_run, intact_dir)
            for file, data in dict(base, **{name: trace.data}).items():
                open(os.path.join(intact_dir, file), "wb").write(data)
            rc, doc, err = report(args.cuaudit, intact_dir, os.path.join(work, "intact.json"))
            if doc is None or rc != 0:
                print("FAIL %s: the intact run gives exit %d: %s" % (run, rc, err[:300]))
                silent.append((run, "intact", ""))
                continue
            intact = comparable(doc)
            if args.sample:
                by_class = {}
                for c in cases:
                    by_class.setdefault(c[0], []).append(c)
                cases = [c for group in by_class.values() for c in rng.sample(group, min(args.sample, len(group)))]
            for cls, desc, files in cases:
                verdict = judge(args.cuaudit, work, golden_run, files, intact)
                key = verdict.split(":")[0]
                if key == "SILENT" and cls == "foreign-chunk" and trace.version < 7:
                    key = "residual"
                tally.setdefault(cls, {}).setdefault(key, 0)
                tally[cls][key] += 1
                if key == "SILENT":
                    silent.append((run, desc, verdict))
                    print("SILENT %s: %s: %s" % (run, desc, verdict))
    print("%-22s %6s %6s %8s %9s %7s" % ("class", "same", "said", "refused", "residual", "SILENT"))
    for cls, counts in sorted(tally.items()):
        print("%-22s %6d %6d %8d %9d %7d" % (cls, counts.get("same", 0), counts.get("said", 0), counts.get("refused", 0),
                                              counts.get("residual", 0), counts.get("SILENT", 0)))
    total = sum(sum(c.values()) for c in tally.values())
    print("%d case(s), %d silent" % (total, len(silent)))
    return 1 if silent else 0


if __name__ == "__main__":
    sys.exit(main())
