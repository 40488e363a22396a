#!/usr/bin/env python3
"""The pytest plugin end to end: `pytest -p pytest_cuaudit --cuaudit SUITE` runs the session under
cuaudit and names the test each finding came from.
--fake: with tests/python/fake_cuaudit.py (no GPU; checks the mechanics and the attribution).
Otherwise with the real cuaudit on a GPU: --suite cupy (tests/python/gpu_suite) or --suite torch
(tests/python/torch_suite; PyTorch's own cached memory is held_by_allocator, not a finding)."""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))


def python_with_pytest():
    for python in [sys.executable, "/usr/bin/python3", shutil.which("python3") or ""]:
        if python and subprocess.run([python, "-c", "import pytest"], stderr=subprocess.DEVNULL).returncode == 0:
            return python
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", help="the real cuaudit (GPU test)")
    ap.add_argument("--fake", action="store_true")
    ap.add_argument("--suite", choices=["cupy", "torch"], default="cupy")
    opts = ap.parse_args()
    python = python_with_pytest()
    if not python:
        print("FAIL no python3 with pytest here: apt-get install python3-pytest (scripts/install-deps.sh does)")
        return 1
    cuaudit = os.path.join(HERE, "fake_cuaudit.py") if opts.fake else opts.cuaudit
    suite = os.path.join(HERE, "cpu_suite" if opts.fake else "torch_suite" if opts.suite == "torch" else "gpu_suite")
    env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "python"), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([python, "-m", "pytest", "-p", "pytest_cuaudit", "--cuaudit", "--cuaudit-path", cuaudit,
                           "-q", "-p", "no:cacheprovider", suite], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env, cwd=SOURCE)
    out = proc.stdout
    print(out[-4000:])
    problems = []
    if proc.returncode != 1:
        problems.append("exit status %d, expected 1 (--error-exitcode 1 by default)" % proc.returncode)
    if opts.fake:
        expected = {"tests/python/cpu_suite/test_plain.py::test_leaks": True,
                    "tests/python/cpu_suite/test_plain.py::test_clean": False,
                    "outside any test": True}
        if "3 passed" not in out:
            problems.append("the session itself did not run its tests under the (fake) cuaudit")
    elif opts.suite == "torch":
        expected = {"tests/python/torch_suite/test_torch_memory.py::test_extension_leaks": True,
                    "tests/python/torch_suite/test_torch_memory.py::test_linear_step": False,
                    "tests/python/torch_suite/test_torch_memory.py::test_matmul": False}
        if "3 passed" not in out:
            problems.append("the session's 3 tests did not all pass under cuaudit")
    else:
        expected = {"tests/python/gpu_suite/test_gpu_memory.py::test_leaks_a_buffer": True,
                    "tests/python/gpu_suite/test_gpu_memory.py::TestModel::test_leaks_from_a_method": True,
                    "tests/python/gpu_suite/test_gpu_memory.py::test_frees_what_it_allocates": False,
                    "tests/python/gpu_suite/test_gpu_memory.py::test_uses_the_device": False}
        if "4 passed" not in out:
            problems.append("the session's 4 tests did not all pass under cuaudit")
    section = out[out.find("cuaudit: "):] if "cuaudit: " in out else ""
    headings = [line for line in section.splitlines() if line and not line.startswith(" ")]
    for nodeid, has_findings in expected.items():
        found = any(h.startswith(nodeid) for h in headings)
        if found != has_findings:
            problems.append("%s %s in the attribution (headings: %s)" % (nodeid, "missing" if has_findings else "wrongly", headings))
    name = "pytest plugin (%s)" % ("fake cuaudit" if opts.fake else "H200, " + ("PyTorch" if opts.suite == "torch" else "CuPy"))
    print(("FAIL %s: " % name + "; ".join(problems)) if problems else "PASS %s: each finding named by its test" % name)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
