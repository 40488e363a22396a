#!/usr/bin/env python3
"""Runs one CUDA test program under cuaudit and checks its findings against the program's own
comments, in the spirit of LLVM's lit:

  // CUAUDIT-ARGS: --error-exitcode 7            extra cuaudit options
  // EXPECT: leak api=cudaMalloc bytes=409600 count=100 at=@temp-alloc
  //   (also severity=warning, verdict=words_of_the_out_of_memory_verdict, note=text, result=*)
  // EXPECT-EXIT: 0                               cuaudit's exit status
  // EXPECT-NOTE: text                            a process note must contain text
  // EXPECT-DEVICES: 2                            the main process named this many devices
  // REQUIRES-DEVICES: 2                          skipped (exit 77, SKIP) on a machine with fewer GPUs
  // EXPECT-SIGNAL: SIGABRT                       the program was killed by this signal
  // EXPECT-PROCESSES: 3                          how many processes the report has
  // EXPECT-ALLOCATIONS: N / EXPECT-RELEASES: N   the tracked counts of the main process
  ... cudaMalloc(&p, n);  // @temp-alloc         the line a finding's first frame must name

Every EXPECT must match exactly one finding and every finding must be expected.
`bytes=*` accepts any size; underscores in api= stand for spaces; process=main|child says whose finding it is. Release findings also take alloc_api=API, alloc_at=@marker (the
allocation stack's first frame), first_at=@marker (the first release's) and result=NAME; note=TEXT
asks for a note containing TEXT; via=@marker asks for that line anywhere in the stack (code called
through a helper of another file, such as a pool's). Launch findings take param=N, type=T, align=N, offset=N, member=N (the
pointer's offset inside a by-value struct) and from=type|code (what requires the alignment). Exit status 0 means the program's findings were as expected.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile


def parse_expectations(source):
    text = open(source).read().splitlines()
    markers = {}
    for number, line in enumerate(text, start=1):
        for name in re.findall(r"//.*?(@[\w-]+)\s*$", line):
            if "EXPECT" not in line:
                markers[name] = number
    expects, args, exit_code, notes, signal, counts = [], [], None, [], None, {}
    for line in text:
        m = re.match(r"\s*// EXPECT: (\w+)((?: \w+=\S+)*)\s*$", line)
        if m:
            fields = dict(f.split("=", 1) for f in m.group(2).split())
            fields["kind"] = m.group(1)
            for key in ("at", "via", "alloc_at", "first_at"):
                if key in fields:
                    fields[key] = markers[fields[key]]
            expects.append(fields)
        m = re.match(r"\s*// CUAUDIT-ARGS: (.*)$", line)
        if m:
            args += shlex.split(m.group(1))
        m = re.match(r"\s*// EXPECT-EXIT: (\d+)", line)
        if m:
            exit_code = int(m.group(1))
        m = re.match(r"\s*// EXPECT-SIGNAL: ([\w|]+)", line)
        if m:
            signal = m.group(1)
        m = re.match(r"\s*// EXPECT-(PROCESSES|ALLOCATIONS|RELEASES|DEVICES): (\d+)", line)
        if m:
            counts[m.group(1).lower()] = int(m.group(2))
        m = re.match(r"\s*// EXPECT-NOTE: (.*)$", line)
        if m:
            notes.append(m.group(1).strip())
    return expects, args, exit_code, notes, signal, counts


def at_line(stack, line, source):
    top = stack[0] if stack else {}
    return top.get("line") == line and (top.get("file") or "").endswith(os.path.basename(source))


def through_line(stack, line, source):
    return any(f.get("line") == line and (f.get("file") or "").endswith(os.path.basename(source)) for f in stack)


def related(finding, role):
    return next((r for r in finding.get("related", []) if r["role"] == role), None)


def matches(expect, finding, source, main_pid):
    if finding["kind"] != expect["kind"]:
        return False
    if "process" in expect and (finding["pid"] == main_pid) != (expect["process"] == "main"):
        return False
    for key in ("api", "bytes", "count", "result", "severity", "device"):
        if key in expect and expect[key] != "*" and str(finding.get(key)) != expect[key]:
            # api=cudaMallocAsync_captured_into_a_graph: an API name with spaces, spelled with underscores
            if key != "api" or str(finding.get(key)) != expect[key].replace("_", " "):
                return False
    note = expect.get("note", "").replace("_", " ")  # underscores stand for spaces
    if "note" in expect and not any(expect["note"] in n or note in n for n in finding.get("notes", [])):
        return False
    parameter = finding.get("parameter") or {}
    if "param" in expect and str(parameter.get("index")) != expect["param"]:
        return False
    if "type" in expect and parameter.get("type") != expect["type"]:
        return False
    if "align" in expect and str(parameter.get("alignment")) != expect["align"]:
        return False
    if "offset" in expect and str(parameter.get("offset")) != expect["offset"]:
        return False
    if "member" in expect and str(parameter.get("member_offset")) != expect["member"]:
        return False
    if "from" in expect and parameter.get("alignment_from") != expect["from"]:
        return False
    oom = finding.get("out_of_memory") or {}
    if "verdict" in expect and expect["verdict"].replace("_", " ") not in oom.get("verdict", ""):
        return False
    if "at" in expect and not at_line(finding["stack"], expect["at"], source):
        return False
    if "via" in expect and not through_line(finding["stack"], expect["via"], source):
        return False
    allocation, first = related(finding, "allocation"), related(finding, "first_release")
    if "alloc_api" in expect and (not allocation or allocation["api"] != expect["alloc_api"]):
        return False
    if "alloc_at" in expect and (not allocation or not at_line(allocation["stack"], expect["alloc_at"], source)):
        return False
    if "first_at" in expect and (not first or not at_line(first["stack"], expect["first_at"], source)):
        return False
    return True


def describe(finding):
    top = finding["stack"][0] if finding["stack"] else {}
    return "{kind} api={api} bytes={bytes} count={count} at {file}:{line}".format(
        file=top.get("file"), line=top.get("line"), **finding)


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    except OSError:
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--keep-run", help="save the recorded run directory here (golden traces)")
    ap.add_argument("--log", help="append cuaudit's text report here")
    ap.add_argument("--standalone", action="store_true",
                    help="no launcher: run the program with CUDA_INJECTION64_PATH alone; it reports at its end")
    opts = ap.parse_args()

    expects, args, expected_exit, notes, expected_signal, counts = parse_expectations(opts.source)
    required = re.search(r"// REQUIRES-DEVICES: (\d+)", open(opts.source).read())
    if required:
        have = gpu_count()
        if have < int(required.group(1)):
            print("SKIP %s: needs %s GPUs, this machine has %d" % (os.path.basename(opts.source), required.group(1), have))
            return 77
    with tempfile.TemporaryDirectory() as tmp:
        json_path = os.path.join(tmp, "report.json")
        env = None
        if opts.standalone:
            bin_dir = os.path.dirname(os.path.abspath(opts.cuaudit))
            env = dict(os.environ, CUDA_INJECTION64_PATH=os.path.join(bin_dir, "libcuaudit-injection.so"),
                       CUAUDIT_TRACE_DIR=os.path.join(tmp, "run"), CUAUDIT_JSON=json_path)
            cmd = [opts.program]
        else:
            cmd = [opts.cuaudit, "--json", json_path] + args
            if opts.keep_run:
                cmd += ["--save", opts.keep_run]
            cmd += [opts.program]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if opts.log:
            with open(opts.log, "a") as log:
                log.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr + "exit %d\n\n" % proc.returncode)
        print(proc.stderr, end="")
        if not os.path.exists(json_path):
            print("FAIL: cuaudit wrote no JSON report (exit %d)" % proc.returncode)
            return 1
        report = json.load(open(json_path))

    failures = []
    if expected_exit is not None and proc.returncode != expected_exit:
        failures.append("exit status %d, expected %d" % (proc.returncode, expected_exit))
    findings = [f for f in report["findings"] if not f["suppressed"]]
    main_pid = report["processes"][0]["pid"] if report["processes"] else None
    unmatched = list(findings)
    for expect in expects:
        hits = [f for f in unmatched if matches(expect, f, opts.source, main_pid)]
        if len(hits) != 1:
            failures.append("expected exactly one finding %s, got %d" % (expect, len(hits)))
        for h in hits[:1]:
            unmatched.remove(h)
    for f in unmatched:
        failures.append("unexpected finding: " + describe(f))
    all_notes = " | ".join(n for p in report["processes"] for n in p["notes"])
    for note in notes:
        if note not in all_notes:
            failures.append("no process note mentions %r (notes: %s)" % (note, all_notes))
    if expected_signal and report["processes"] and report["processes"][0]["signal"] not in expected_signal.split("|"):
        failures.append("the program ended with %s, expected %s" % (report["processes"][0]["signal"], expected_signal))
    if "processes" in counts and len(report["processes"]) != counts["processes"]:
        failures.append("%d processes in the report, expected %d" % (len(report["processes"]), counts["processes"]))
    if "devices" in counts and report["processes"] and len(report["processes"][0].get("devices", [])) != counts["devices"]:
        failures.append("%d devices named, expected %d" % (len(report["processes"][0].get("devices", [])), counts["devices"]))
    for key in ("allocations", "releases"):
        if key in counts and report["processes"] and report["processes"][0][key] != counts[key]:
            failures.append("%s: %d tracked, the program made %d" % (key, report["processes"][0][key], counts[key]))
    if not report["processes"] or not report["processes"][0]["tracked"]:
        failures.append("the process was not tracked")

    name = os.path.basename(opts.source)
    if failures:
        print("FAIL %s:\n  %s" % (name, "\n  ".join(failures)))
        return 1
    print("PASS %s: %d finding(s) as expected, exit %d" % (name, len(findings), proc.returncode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
