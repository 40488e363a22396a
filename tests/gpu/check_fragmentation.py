#!/usr/bin/env python3
"""Framework pools cut into holes, and PyTorch refusing memory itself, under cuaudit: cupy_fragmentation.py (fragment: a fragmentation
warning at the @ask line, of CuPy's pool, with the sites that pinned the holes and a picture of its
segments; uniform: none) and torch_fragmentation.py (an out_of_memory whose verdict is fragmentation
inside PyTorch's cache, measured, once, at the @ask line) and torch_memory_fraction.py (an
out_of_memory from PyTorch's own history, no CUDA call failing: the cap, at the @ask line). Prints
what the findings say."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def marker(script, name):
    return next(n for n, text in enumerate(open(script), start=1) if re.search(r"#\s*@%s\s*$" % name, text))


def run(opts, tmp, script, *args):
    out = os.path.join(tmp, os.path.basename(script) + "".join(args) + ".json")
    cmd = [opts.cuaudit, "--json", out, "--leak-check", "summary", "--", sys.executable, script, *args]
    if opts.keep:  # the reports, and the recorded run (a golden trace)
        name = os.path.basename(script).replace(".py", "") + "".join("-" + a for a in args)
        cmd[1:1] = ["--html", os.path.join(opts.keep, name + ".html"), "--save", os.path.join(opts.keep, name + "-run")]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if opts.log:
        with open(opts.log, "a") as log:
            log.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr + "exit %d\n\n" % proc.returncode)
    print("\n".join("  program: " + line for line in proc.stdout.splitlines()[-3:]))
    report = json.load(open(out))
    if opts.keep:
        with open(os.path.join(opts.keep, os.path.basename(out)), "w") as f:
            json.dump(report, f)
    return proc.returncode, report


def at_line(f, script):
    return any(fr.get("file", "").endswith(os.path.basename(script)) and fr.get("line") == marker(script, "ask")
               for fr in f["stack"][:3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--cupy-script")
    ap.add_argument("--torch-script")
    ap.add_argument("--cap-script", help="torch_memory_fraction.py: PyTorch refusing memory itself")
    ap.add_argument("--log")
    ap.add_argument("--keep", help="a folder for the reports (JSON and HTML)")
    opts = ap.parse_args()
    if opts.keep:
        os.makedirs(opts.keep, exist_ok=True)  # cuaudit writes no --html into a folder that is not there
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        if opts.cupy_script:
            status, report = run(opts, tmp, opts.cupy_script, "fragment")
            frag = [f for f in report["findings"] if f["kind"] == "fragmentation"]
            for f in frag:
                g = f["fragmentation"]
                print("cupy fragment: %s\n  %d misses, sizes %s, %d segment(s) pictured, sites %s" % (
                    f["headline"], g["misses"], g["request_sizes"], len(g["picture"]["segments"]),
                    [(s["api"], (s["at"] or {}).get("line")) for s in g["picture"]["sites"]]))
            if len(frag) != 1 or not at_line(frag[0], opts.cupy_script) or frag[0]["api"] != "MemoryPool.malloc":
                failures.append("cupy fragment: expected one fragmentation warning at the @ask line, got %s" %
                                [(f["api"], f["stack"][:1]) for f in frag])
            elif not any((s["at"] or {}).get("line") == marker(opts.cupy_script, "keep")
                         for s in frag[0]["fragmentation"]["picture"]["sites"]):
                failures.append("cupy fragment: the kept arrays' line is not among the sites that pin the holes")
            status, report = run(opts, tmp, opts.cupy_script, "uniform")
            frag = [f for f in report["findings"] if f["kind"] == "fragmentation"]
            print("cupy uniform: %d fragmentation finding(s)" % len(frag))
            if frag:
                failures.append("cupy uniform: requests that fit the holes made a finding: " + frag[0]["headline"])
        if opts.torch_script:
            status, report = run(opts, tmp, opts.torch_script)
            ooms = [f for f in report["findings"] if f["kind"] == "out_of_memory"]
            for f in ooms:
                print("torch: %s\n  %s" % (f["headline"], "\n  ".join(f["notes"])))
            if len(ooms) != 1:
                failures.append("torch: expected one out_of_memory finding, got %d" % len(ooms))
            elif "measured in the pool" not in ooms[0]["out_of_memory"]["verdict"] or \
                    "PyTorch" not in ooms[0]["out_of_memory"]["verdict"]:
                failures.append("torch: the verdict is not fragmentation inside PyTorch's cache: " +
                                ooms[0]["out_of_memory"]["verdict"])
            elif not at_line(ooms[0], opts.torch_script):
                failures.append("torch: the finding is not at the @ask line: %s" % ooms[0]["stack"][:3])
            bad = [f["kind"] for f in report["findings"] if f["severity"] == "error" and f["kind"] != "out_of_memory"]
            if bad:
                failures.append("torch: other errors: %s" % bad)
        if opts.cap_script:
            status, report = run(opts, tmp, opts.cap_script)
            ooms = [f for f in report["findings"] if f["kind"] == "out_of_memory"]
            for f in ooms:
                print("torch cap: %s\n  %s" % (f["headline"], "\n  ".join(f["notes"])))
            if len(ooms) != 1 or "refused it itself" not in ooms[0]["out_of_memory"]["verdict"]:
                failures.append("torch cap: expected one out_of_memory whose verdict is the cap, got %s" %
                                [f["out_of_memory"]["verdict"] for f in ooms])
            elif not at_line(ooms[0], opts.cap_script):
                failures.append("torch cap: the finding is not at the @ask line: %s" % ooms[0]["stack"][:3])
    for f in failures:
        print("FAIL " + f)
    if not failures:
        print("PASS framework pools cut into holes: the fragmentation finding and the out-of-memory verdict")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
