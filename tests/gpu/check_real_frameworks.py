#!/usr/bin/env python3
"""Real framework code nobody here wrote, natively and under cuaudit (tests/gpu/real/).

For each workload (torchvision's ResNet-50, a transformers GPT-2 from a config, a PyTorch Lightning
fit loop, torch.compile, CuPy, JAX): the run under cuaudit must exit as the native run did and print
the same result line, with no finding of severity error or warning; with --leak (a list that keeps a
tensor per step, the script's @leak line) exactly the leak must be found, at that line, and nothing
else. numba-cuda's own test modules run natively and under cuaudit: the same tests pass, and no
error or warning finding comes from them (run by pytest).

Prints one line per run (ok, failed, skipped) and PASS or FAIL; exit status 1 when any failed."""
import argparse
import concurrent.futures
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = {  # name -> (script, the module that must import)
    "resnet50": ("resnet50_train.py", "torchvision"),
    "transformers": ("transformers_train.py", "transformers"),
    "lightning": ("lightning_fit.py", "pytorch_lightning"),
    "torch_compile": ("torch_compile_train.py", "torch"),
    "cupy": ("cupy_workload.py", "cupy"),
    "jax": ("jax_workload.py", "jax"),
    "numba_kernels": ("numba_workload.py", "numba.cuda"),
}
NUMBA_MODULES = ["cudapy.test_array", "cudapy.test_atomics", "cudapy.test_reduction", "cudapy.test_sm",
                 "cudapy.test_matmul", "cudapy.test_montecarlo", "cudapy.test_laplace", "cudapy.test_blackscholes",
                 "cudapy.test_gufunc", "cudapy.test_vectorize", "cudadrv.test_cuda_memory",
                 "cudadrv.test_deallocations", "cudadrv.test_host_alloc", "cudadrv.test_pinned",
                 "cudadrv.test_managed_alloc", "cudadrv.test_events"]
# (cudadrv.test_streams is left out: on the H200 all its tests are skipped, CUDA is never used, and
# cuaudit rightly ends with 122, "nothing tracked".)


@functools.lru_cache(maxsize=None)  # asked once per module, not once per numba test module
def importable(module):
    return subprocess.run([sys.executable, "-c", "import " + module], capture_output=True).returncode == 0


def result_line(text, pattern):
    lines = [line for line in text.splitlines() if re.search(pattern, line)]
    return lines[-1].strip() if lines else None


def findings_that_count(report):
    return [f for f in report["findings"] if f["severity"] in ("error", "warning") and not f.get("suppressed")]


def describe(f):
    top = f["stack"][0] if f.get("stack") else {}
    return "%s (%s) %s at %s:%s %s" % (f["kind"], f["severity"], f.get("api"), os.path.basename(top.get("file") or
                                       top.get("module") or "?"), top.get("line"), (top.get("function") or "")[:60])


def under_cuaudit(opts, name, cmd, env=None):
    out = os.path.join(opts.keep, name + ".json")
    full = [opts.cuaudit, "--json", out, "--leak-check", "summary", "--error-exitcode", "9",
            "--save", os.path.join(opts.keep, name + "-run"), "--"] + cmd
    start = time.time()
    proc = subprocess.run(full, capture_output=True, text=True, env=env)
    seconds = time.time() - start
    with open(os.path.join(opts.keep, name + ".log"), "w") as log:
        log.write("$ %s\n%s%s\nexit %d, %.1f s\n" % (" ".join(full), proc.stdout, proc.stderr, proc.returncode, seconds))
    try:
        report = json.load(open(out))
    except (OSError, ValueError) as error:
        report = {"findings": [], "error": repr(error)}
    return proc, report, seconds


def native(cmd, env=None):
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return proc, time.time() - start


def check_workload(opts, name):
    script, module = WORKLOADS[name]
    path = os.path.join(HERE, "real", script)
    if not importable(module):
        return ["  skipped %s: %s is not installed" % (name, module)], []
    leak_line = next(n for n, text in enumerate(open(path), start=1) if re.search(r"#\s*@leak\s*$", text))
    lines, failures = [], []
    for leak in (False, True):
        cmd = [sys.executable, path] + (["--leak"] if leak else [])
        label = name + ("-leak" if leak else "")
        base, native_s = native(cmd)
        proc, report, audit_s = under_cuaudit(opts, label, cmd)
        want, got = result_line(base.stdout, r"^result: "), result_line(proc.stdout, r"^result: ")
        problems = []
        if base.returncode != 0:
            problems.append("the native run failed (exit %d): %s" % (base.returncode, base.stderr[-400:]))
        if want != got:
            problems.append("result line %r under cuaudit, %r natively" % (got, want))
        counted = findings_that_count(report)
        at_line = [f for f in counted if f.get("stack") and (f["stack"][0].get("file") or "").endswith(script)
                   and f["stack"][0].get("line") == leak_line]
        others = [f for f in counted if f not in at_line]
        expected_status = 9 if leak else base.returncode
        if proc.returncode != expected_status:
            problems.append("exit status %d under cuaudit, expected %d" % (proc.returncode, expected_status))
        if leak and len(at_line) != 1:
            problems.append("%d findings at the @leak line %d, expected 1" % (len(at_line), leak_line))
        problems += ["false finding: " + describe(f) for f in others]
        verdict = "failed" if problems else "ok"
        found = "; found: " + describe(at_line[0]) if at_line else ""
        lines.append("  %s %s: native %.1f s, cuaudit %.1f s, exit %d%s%s" % (
            verdict, label, native_s, audit_s, proc.returncode, found, "".join("\n    " + p for p in problems)))
        failures += [label] if problems else []
    return lines, failures


# numba-cuda's tests need two things the H200's Python does not give them, whatever cuaudit does:
# - numba.cuda.testing imports filecheck, a test-only dependency its numba-cuda came without (and that
#   machine cannot download): the modules below do not use it, so a stand-in lets them import; a test
#   that does use it fails, natively and under cuaudit alike.
# - numba-cuda's arrayobj.py registers np.row_stack, an alias of np.vstack that NumPy 2.4 removed:
#   without it no kernel module imports. numba-cuda's CUDATestCase also asks for a fixture,
#   initialize_from_pytest_config, from the conftest.py of numba-cuda's repository (not installed).
#   A pytest plugin (-p, loaded before collection, natively and under cuaudit alike) gives both:
#   the alias, and the fixture doing nothing (numba's configuration stays as its environment sets it).
_MISSING = ("class _Missing:\n"
            "    def __init__(self, *args, **kwargs):\n"
            "        raise RuntimeError('filecheck is not installed (cuaudit test stand-in)')\n"
            "def __getattr__(name):\n"
            "    if name.startswith('__'):\n"
            "        raise AttributeError(name)\n"
            "    return _Missing\n")
STAND_INS = {os.path.join("filecheck", name + ".py"): _MISSING for name in ("__init__", "matcher", "options", "parser",
                                                                           "finput")}
NUMBA_TEST_PLUGIN = "cuaudit_numba_test_stand_ins"
STAND_INS[NUMBA_TEST_PLUGIN + ".py"] = ("import numpy\n"
                                           "import pytest\n"
                                           "if not hasattr(numpy, 'row_stack'):\n"
                                           "    numpy.row_stack = numpy.vstack\n"
                                           "@pytest.fixture\n"
                                           "def initialize_from_pytest_config():\n"
                                           "    yield\n")


def numba_env(opts):
    """The environment numba-cuda's tests run in: the stand-ins above first on PYTHONPATH."""
    folder = os.path.join(opts.keep, "numba-stand-ins")
    for name, text in STAND_INS.items():
        if name.startswith("filecheck") and importable("filecheck"):
            continue
        os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p))


def check_numba_module(opts, module):
    """One module of numba-cuda's own test suite (installed with it), run by pytest."""
    if not importable("numba.cuda"):
        return ["  skipped numba: numba-cuda is not installed"], []
    env = numba_env(opts)
    # importlib mode: numba-cuda's tests live in numba_cuda/numba/cuda/tests, which pytest's default
    # mode names "cuda.tests..." and cannot import.
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", NUMBA_TEST_PLUGIN,
           "--import-mode=importlib", "--pyargs",
           "numba.cuda.tests." + module]
    base, native_s = native(cmd, env)
    label = "numba-" + module.split(".")[-1]
    proc, report, audit_s = under_cuaudit(opts, label, cmd, env)
    # pytest's last line: "12 passed, 1 skipped in 3.21s" (the time left out)
    tally = lambda text: result_line(re.sub(r" in [0-9.]+s.*", "", text), r"\d+ (passed|failed|skipped|error)")
    problems = []
    if tally(base.stdout) != tally(proc.stdout):
        problems.append("native: %s; under cuaudit: %s" % (tally(base.stdout), tally(proc.stdout)))
    if proc.returncode != base.returncode:
        problems.append("exit status %d under cuaudit, %d natively" % (proc.returncode, base.returncode))
    problems += ["false finding: " + describe(f) for f in findings_that_count(report)]
    line = "  %s %s: %s, native %.1f s, cuaudit %.1f s%s" % (
        "failed" if problems else "ok", label, tally(base.stdout), native_s, audit_s,
        "".join("\n      " + p for p in problems))
    return [line], [label] if problems else []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--keep", help="keep the reports, logs and recorded runs here (default: a temporary folder)")
    ap.add_argument("--only", nargs="*", help="workloads to run (%s; numba: modules of numba-cuda's own test suite)" % ", ".join(WORKLOADS))
    ap.add_argument("--jobs", type=int, default=3, help="workloads run side by side (JAX always alone)")
    opts = ap.parse_args()
    tmp = None
    if not opts.keep:
        tmp = tempfile.TemporaryDirectory()
        opts.keep = tmp.name
    os.makedirs(opts.keep, exist_ok=True)
    chosen = opts.only or list(WORKLOADS) + ["numba"]
    # Everything but JAX side by side (XLA takes 75% of the device at start: JAX runs alone, last).
    tasks = [(check_workload, n) for n in chosen if n not in ("jax", "numba")]
    tasks += [(check_numba_module, m) for m in (NUMBA_MODULES if "numba" in chosen else [])]
    results = []

    def done(result):  # printed as each ends: a run cut short by a time limit keeps what finished
        results.append(result)
        for line in result[0]:
            print(line, flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        for future in concurrent.futures.as_completed([pool.submit(f, opts, n) for f, n in tasks]):
            done(future.result())
    if "jax" in chosen:
        done(check_workload(opts, "jax"))
    failures = [f for _, fs in results for f in fs]
    ran = sum(1 for lines, _ in results for line in lines if not line.startswith("  skipped"))
    if failures:
        print("FAIL real frameworks: %d of %d runs failed: %s" % (len(failures), ran, ", ".join(failures)))
    else:
        print("PASS real frameworks: %d runs, exit status and results as native, no false finding, every planted "
              "leak at its line" % ran)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
