#!/usr/bin/env python3
"""JAX under cuaudit, beyond the real workload of check_real_frameworks.py: XLA's out-of-memory
error (jax_oom.py) is one out_of_memory finding at the line that asked, with XLA's own figures, the
verdict that the program's arrays filled its allocator and the line that filled it as the top
holder; a request larger than all XLA may hold (XLA_PYTHON_CLIENT_MEM_FRACTION) has that verdict;
and the real workload with XLA's preallocation off (XLA_PYTHON_CLIENT_PREALLOCATE=false)
gives no false finding, and its planted leak is found at its line."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def marked_line(path, mark):
    return next(n for n, text in enumerate(open(path), start=1) if re.search(r"#\s*@%s\s*$" % mark, text))


def run(opts, tmp, name, cmd, env=None):
    out = os.path.join(tmp, name + ".json")
    save = ["--save", os.path.join(opts.keep, name + "-run")] if opts.keep else []
    full = [opts.cuaudit, "--json", out, "--leak-check", "summary"] + save + ["--"] + cmd
    proc = subprocess.run(full, capture_output=True, text=True, env=env)
    if opts.log:
        with open(opts.log, "a") as log:
            log.write("$ %s\n%s%s\nexit %d\n\n" % (" ".join(full), proc.stdout, proc.stderr, proc.returncode))
    report = json.load(open(out))
    if opts.keep:
        with open(os.path.join(opts.keep, name + ".json"), "w") as copy:
            json.dump(report, copy, indent=1)
    return proc, report


def counted(report):
    return [f for f in report["findings"] if f["severity"] in ("error", "warning") and not f.get("suppressed")]


def one_oom(opts, tmp, name, args, env, line, failures):
    """jax_oom.py ARGS under cuaudit: the program catches XLA's error and exits 0; the report has one
    out_of_memory, at `line`, and no other error or warning. Returns the out_of_memory findings."""
    proc, report = run(opts, tmp, name, [sys.executable, opts.oom_script] + args, env)
    ooms = [f for f in report["findings"] if f["kind"] == "out_of_memory"]
    print("%s: exit %d; %s" % (name, proc.returncode, [(f["headline"], f["stack"][0].get("line") if f["stack"] else None)
                                                     for f in ooms]))
    if proc.returncode != 0 or "caught: RESOURCE_EXHAUSTED" not in proc.stdout:
        failures.append("%s: exit %d, output %r" % (name, proc.returncode, proc.stdout[-300:]))
    if len(ooms) != 1:
        failures.append("%s: %d out_of_memory findings, expected 1" % (name, len(ooms)))
    for f in ooms:
        print("  verdict:", (f.get("out_of_memory") or {}).get("verdict"))
        top = f["stack"][0] if f["stack"] else {}
        if top.get("line") != line:
            failures.append("%s: out_of_memory at line %s, expected %d" % (name, top.get("line"), line))
    failures += ["%s: false finding %s %s" % (name, f["kind"], f["headline"][:160])
                 for f in counted(report) if f["kind"] != "out_of_memory"]
    return ooms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--oom-script", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--log")
    ap.add_argument("--keep")
    opts = ap.parse_args()
    if opts.keep:
        os.makedirs(opts.keep, exist_ok=True)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        # The arrays fill XLA's allocator, then a request larger than what is left.
        request, fill = marked_line(opts.oom_script, "request"), marked_line(opts.oom_script, "fill")
        for f in one_oom(opts, tmp, "jax-oom", [], None, request, failures):
            o = f.get("out_of_memory") or {}
            holders = [r for r in f.get("related", []) if r["role"] == "holder"]
            if not o.get("verdict", "").startswith("the program's arrays filled XLA's GPU allocator"):
                failures.append("verdict: %r" % o.get("verdict"))
            if not o.get("allocator_limit"):
                failures.append("no allocator figures: %s" % o)
            if not holders or not holders[0]["stack"] or holders[0]["stack"][0].get("line") != fill:
                failures.append("top holder: %s, expected line %d" % (
                    [(h["title"], h["stack"][0].get("line") if h["stack"] else None) for h in holders], fill))
            for note in f.get("notes", []):
                print("  note:", note)
            for h in holders:
                print("  holder:", h["title"], h["stack"][0] if h["stack"] else None)
        # A request larger than all XLA may hold (half the device), smaller than the device.
        env = dict(os.environ, XLA_PYTHON_CLIENT_MEM_FRACTION="0.5")
        for f in one_oom(opts, tmp, "jax-oom-too-large", ["--too-large"], env,
                         marked_line(opts.oom_script, "toolarge"), failures):
            if "the request alone is larger than all it may hold" not in (f.get("out_of_memory") or {}).get("verdict", ""):
                failures.append("too large: verdict %r" % f["out_of_memory"].get("verdict"))

        env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
        leak_line = marked_line(opts.workload, "leak")
        for leak in (False, True):
            proc, report = run(opts, tmp, "jax-nopre" + ("-leak" if leak else ""),
                               [sys.executable, opts.workload] + (["--leak"] if leak else []), env)
            found = [f for f in counted(report) if f["stack"] and f["stack"][0].get("line") == leak_line and
                     (f["stack"][0].get("file") or "").endswith(os.path.basename(opts.workload))]
            others = [f for f in counted(report) if f not in found]
            print("jax, preallocation off%s: exit %d, found %s, others %s" % (
                " with the leak" if leak else "", proc.returncode, [f["headline"][:160] for f in found],
                [f["headline"][:160] for f in others]))
            if proc.returncode != 0:
                failures.append("preallocation off%s: exit %d" % (" (leak)" if leak else "", proc.returncode))
            if leak and len(found) != 1:
                failures.append("preallocation off: the leak at line %d found %d times" % (leak_line, len(found)))
            failures += ["preallocation off: false finding %s %s" % (f["kind"], f["headline"][:160]) for f in others]
    if failures:
        print("FAIL jax:\n  " + "\n  ".join(failures))
        return 1
    print("PASS jax: XLA's out-of-memory error at its line with XLA's figures and its holder; preallocation off "
          "clean, its leak found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
