#!/usr/bin/env python3
"""CMAKE_TEST_LAUNCHER on the GPU machine: examples/ctest_launcher is configured with cuaudit as the
test launcher, built, and run with ctest; the leaking test fails with its leak named, the clean one
passes."""
import argparse
import os
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--project", required=True)
    ap.add_argument("--build", required=True)
    opts = ap.parse_args()
    shutil.rmtree(opts.build, ignore_errors=True)
    env = dict(os.environ, PATH=os.environ["PATH"] + ":/usr/local/cuda/bin")
    launcher = "%s;--error-exitcode;1;--" % os.path.abspath(opts.cuaudit)
    steps = [["cmake", "-S", opts.project, "-B", opts.build, "-DCMAKE_CUDA_ARCHITECTURES=90",
              "-DCMAKE_TEST_LAUNCHER=" + launcher],
             ["cmake", "--build", opts.build]]
    for step in steps:
        proc = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if proc.returncode != 0:
            print("FAIL ctest launcher: %s failed:\n%s" % (" ".join(step[:2]), proc.stdout[-2000:]))
            return 1
    version = subprocess.run(["cmake", "--version"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
    proc = subprocess.run(["ctest", "--test-dir", opts.build, "--output-on-failure"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env)
    out = proc.stdout
    print(out[-3000:])
    problems = []
    if "clean_kernel ...................   Passed" not in out.replace("....", "...") and not any(
            "clean_kernel" in line and "Passed" in line for line in out.splitlines()):
        problems.append("clean_kernel did not pass")
    if not any("leaky_kernel" in line and "Failed" in line for line in out.splitlines()):
        problems.append("leaky_kernel did not fail")
    if "leaky_kernel.cu:13" not in out or "Leak of" not in out:
        problems.append("the leak is not named at leaky_kernel.cu:13 in the test's output")
    print(("FAIL ctest launcher (%s): " % version + "; ".join(problems)) if problems else
          "PASS ctest launcher (%s): every test ran under cuaudit; the leaking one failed at its line" % version)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
