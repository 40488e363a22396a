#!/usr/bin/env python3
"""torch_oom_verdicts.py under cuaudit: PyTorch out of memory because the program's own tensors
filled the device (`filled`: one out_of_memory at the @ask line whose verdict is the program's own
allocations, the @keep line first among the holders, PyTorch's retry counted with the failure), and
because another process holds the device (`other`: this script first starts a process outside
cuaudit that holds most of the device; the verdict must name another process). Prints what the
findings say."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HOLDER = """
import sys, torch
free, total = torch.cuda.mem_get_info()
x = torch.empty(free - 24 * (1 << 30), dtype=torch.uint8, device="cuda")
print("held", x.numel(), flush=True)
sys.stdin.read()
"""


def marker(script, name):
    return next(n for n, text in enumerate(open(script), start=1)
                if not text.lstrip().startswith("#") and re.search(r"#.*@%s\b" % name, text))


def run(opts, tmp, mode):
    out = os.path.join(tmp, mode + ".json")
    cmd = [opts.cuaudit, "--json", out, "--leak-check", "summary"]
    if opts.keep:
        cmd += ["--html", os.path.join(opts.keep, "torch-oom-%s.html" % mode),
                "--save", os.path.join(opts.keep, "torch-oom-%s-run" % mode)]
    cmd += ["--", sys.executable, opts.script, mode]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if opts.log:
        with open(opts.log, "a") as log:
            log.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr + "exit %d\n\n" % proc.returncode)
    print("\n".join("  program: " + line for line in proc.stdout.splitlines()[-2:]))
    report = json.load(open(out))
    if opts.keep:
        with open(os.path.join(opts.keep, "torch-oom-%s.json" % mode), "w") as f:
            json.dump(report, f)
    return report


def one_oom(report, mode, script, failures):
    ooms = [f for f in report["findings"] if f["kind"] == "out_of_memory"]
    for f in ooms:
        print("%s: %s\n  verdict: %s\n  %s" % (mode, f["headline"], f["out_of_memory"]["verdict"],
                                                "\n  ".join(f["notes"])))
        for r in f.get("related", []):
            top = r["stack"][0] if r["stack"] else {}
            print("  related %s: %s %s:%s" % (r["role"], r["title"][:120], top.get("file"), top.get("line")))
    if len(ooms) != 1:
        failures.append("%s: expected one out_of_memory finding, got %d" % (mode, len(ooms)))
        return None
    f = ooms[0]
    if not any((fr.get("file") or "").endswith(os.path.basename(script)) and fr.get("line") == marker(script, "ask" if mode == "filled" else "ask_other")
               for fr in f["stack"][:3]):
        failures.append("%s: the finding is not at the @ask line: %s" % (mode, f["stack"][:3]))
    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--log")
    ap.add_argument("--keep", help="a folder for the reports and the recorded runs")
    opts = ap.parse_args()
    if opts.keep:
        os.makedirs(opts.keep, exist_ok=True)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        f = one_oom(run(opts, tmp, "filled"), "filled", opts.script, failures)
        if f:
            verdict = f["out_of_memory"]["verdict"]
            if verdict != "the program's own allocations filled the device":
                failures.append("filled: the verdict is not the program's own allocations: " + verdict)
            holders = [r for r in f.get("related", []) if r["role"] == "holder"]
            keep = marker(opts.script, "keep")
            if not holders or not any(fr.get("line") == keep for fr in holders[0]["stack"][:3]):
                failures.append("filled: the first holder is not the @keep line: %s" %
                                [h["stack"][:2] for h in holders])
        holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        try:
            line = holder.stdout.readline()
            print("other process: %s" % line.strip())
            f = one_oom(run(opts, tmp, "other"), "other", opts.script, failures)
            if f and "another process holds" not in f["out_of_memory"]["verdict"]:
                failures.append("other: the verdict does not name the other process: %s (NVML said %s)" % (
                    f["out_of_memory"]["verdict"], f["out_of_memory"].get("other_processes")))
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)
    for f in failures:
        print("FAIL " + f)
    if not failures:
        print("PASS PyTorch out of memory: the program's tensors filled the device; another process held it")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
