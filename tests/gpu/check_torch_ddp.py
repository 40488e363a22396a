#!/usr/bin/env python3
"""torchrun --nproc-per-node 2 with each rank under its own cuaudit (--output per rank), then
`cuaudit merge`: each rank's report names its own device and holds its memory there, and neither a
rank nor the merged report has an error finding (NCCL's and PyTorch's buffers are held_by_allocator)."""
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
    ap.add_argument("--keep-dir", help="copy the rank and merged JSON reports here")
    opts = ap.parse_args()
    cuaudit = os.path.abspath(opts.cuaudit)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--no-python", cuaudit,
               "--output", os.path.join(tmp, "rank-%q{RANK}"), sys.executable, os.path.abspath(opts.script)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        with open(opts.log, "a") as log:
            log.write("$ " + " ".join(cmd) + "\n" + proc.stdout + "exit %d\n\n" % proc.returncode)
        if proc.returncode != 0:
            failures.append("torchrun exit status %d" % proc.returncode)
        ranks = []
        for rank in range(2):
            path = os.path.join(tmp, "rank-%d" % rank, "report.json")
            if not os.path.exists(path):
                failures.append("rank %d wrote no report" % rank)
                continue
            ranks.append(json.load(open(path)))
        merged_path = os.path.join(tmp, "merged.json")
        merge = subprocess.run([cuaudit, "merge", os.path.join(tmp, "rank-0"), os.path.join(tmp, "rank-1"),
                                "--json", merged_path, "--html", os.path.join(tmp, "merged.html")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with open(opts.log, "a") as log:
            log.write(merge.stdout)
        merged = json.load(open(merged_path)) if os.path.exists(merged_path) else None
        if opts.keep_dir:
            for rank, report in enumerate(ranks):
                json.dump(report, open(os.path.join(opts.keep_dir, "ddp-rank-%d.json" % rank), "w"), indent=1)
    for rank, report in enumerate(ranks):
        main = report["processes"][0] if report["processes"] else {}
        devices = [d["ordinal"] for d in main.get("devices", [])]
        held = {}
        for s in report["timeline"]["samples"]:
            if s["pid"] == main.get("pid"):
                held[s["device"]] = max(held.get(s["device"], 0), s["tracked"])
        print("rank %d: pid %s, devices %s, most tracked per device %s, finding kinds %s"
              % (rank, main.get("pid"), devices, held, sorted({f["kind"] for f in report["findings"]})))
        if rank not in devices:
            failures.append("rank %d's report does not name device %d (devices %s)" % (rank, rank, devices))
        if held and max(held, key=held.get) != rank:
            failures.append("rank %d held most of its memory on device %d" % (rank, max(held, key=held.get)))
        for f in report["findings"]:
            if f["severity"] == "error" and not f["suppressed"]:
                top = f["stack"][0] if f["stack"] else {}
                failures.append("rank %d: error finding %s %s at %s (%s)" % (rank, f["kind"], f["api"],
                                                                             top.get("function"), top.get("module")))
    if merged is None:
        failures.append("cuaudit merge wrote no report")
    else:
        print("merged: %d processes, %d findings, %d errors, ranks per finding %s"
              % (len(merged["processes"]), len(merged["findings"]), merged["summary"]["errors"],
                 sorted({tuple(f.get("ranks", [])) for f in merged["findings"]})))
        if merged["summary"]["errors"]:
            failures.append("the merged report has %d errors" % merged["summary"]["errors"])
    if failures:
        print("FAIL torch_ddp:\n  " + "\n  ".join(failures))
        return 1
    print("PASS torch_ddp: two ranks, each on its own device, no error findings, merged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
