#!/usr/bin/env python3
"""Plays cuaudit for the plugin's CPU test: `fake_cuaudit.py --json FILE [options] -- COMMAND...`
runs COMMAND, then writes a report with one leak whose Python stack passes through test_leaks (found
in the tests file the plugin wrote, as a real run's frames would name it) and one from no test,
and exits as cuaudit does with --error-exitcode 1."""
import json
import os
import subprocess
import sys

args = sys.argv[1:]
split = args.index("--")
options, command = args[:split], args[split + 1:]
report_file = options[options.index("--json") + 1]
status = subprocess.call(command)
tests = json.load(open(os.environ["CUAUDIT_PYTEST_TESTS_FILE"]))
leaky = next(t for t in tests if t["name"] == "test_leaks")


def python_frame(file, function, line):
    return {"function": function, "file": file, "line": line, "module": "python", "pc": "0x0"}


leak = {"kind": "leak", "severity": "error", "api": "cudaMalloc", "bytes": 4096, "suppressed": False,
        "message": "4096 byte(s) of device memory in 1 allocation(s) from cudaMalloc were never released",
        "stack": [python_frame(leaky["file"], "test_leaks", 8)],
        "related": [{"role": "python", "stack": [python_frame("/usr/lib/python3/site-packages/torch/x.py", "alloc", 1),
                                                 python_frame(leaky["file"], "test_leaks", 8)]}]}
orphan = dict(leak, bytes=64, stack=[python_frame("/elsewhere/conftest.py", "fixture", 3)], related=[])
note = dict(leak, kind="held_by_allocator", severity="info")
json.dump({"schema": "cuaudit.report.v1", "findings": [leak, orphan, note]}, open(report_file, "w"))
sys.exit(1 if "--error-exitcode" in options else status)
