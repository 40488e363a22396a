#!/usr/bin/env python3
"""compute-sanitizer's saved records as cuaudit suppressions, and valgrind's block form, on a run
recorded on the H200 (the demo: a leak in process_batch, one in upload): `cuaudit suppressions
import cs.xml` writes rules that silence the leak compute-sanitizer's file names and nothing else;
a block with max-hits hides that many findings and reports the rest; an XML file given to
--suppressions is refused with the command that imports it."""
import os
import subprocess
import sys
import tempfile

from golden_run import checker_arguments, finish, report_golden

# The demo's cudaMalloc leak as compute-sanitizer --leak-check full --xml yes --save records it
# (driver and runtime frames first), and a device-side error cuaudit has no counterpart for.
SANITIZER_XML = """<?xml version="1.0" encoding="UTF-8"?>
<ComputeSanitizerOutput>
  <record>
    <kind>Leak</kind><level>Error</level>
    <what><text>Leaked 16384 bytes at 0x7f3a4c000000</text><size>16384</size></what>
    <hostStack>
      <frame><func>cuMemAlloc_v2</func><module>/lib/x86_64-linux-gnu/libcuda.so.1</module></frame>
      <frame><func>cudaMalloc</func><module>/work/main/.gpu/bin/demo_leaks</module></frame>
      <frame><func>_ZL13process_batchPKfii</func><module>/work/main/.gpu/bin/demo_leaks</module></frame>
      <frame><func>main</func><module>/work/main/.gpu/bin/demo_leaks</module></frame>
      <frame><func>__libc_start_main</func><module>/lib/x86_64-linux-gnu/libc.so.6</module></frame>
    </hostStack>
  </record>
  <record>
    <kind>Precise</kind><level>Error</level>
    <what><text>Invalid __global__ write of size 4 bytes</text></what>
    <hostStack><frame><func>main</func><module>/work/main/.gpu/bin/demo_leaks</module></frame></hostStack>
  </record>
</ComputeSanitizerOutput>
"""


def main():
    opts = checker_arguments()
    failures = []
    run = lambda *args: subprocess.run([opts.cuaudit] + list(args), capture_output=True, text=True)
    report = lambda tmp, *args: report_golden(opts.cuaudit, opts.golden, tmp, "--error-exitcode", "3", *args)
    with tempfile.TemporaryDirectory() as tmp:
        xml, supp = os.path.join(tmp, "cs.xml"), os.path.join(tmp, "cs.supp")
        open(xml, "w").write(SANITIZER_XML)
        proc = run("suppressions", "import", xml)
        if proc.returncode != 0 or "1 rule(s) from 2 record(s)" not in proc.stderr:
            failures.append("import: exit %d, %s" % (proc.returncode, proc.stderr))
        if "{\n   cs.xml record 1\n   leak\n   fun:process_batch\n   fun:main\n}\n" not in proc.stdout:
            failures.append("import wrote no block for the leak: %s" % proc.stdout)
        if "# record 2 (Precise: Invalid __global__ write of size 4 bytes): no rule" not in proc.stdout:
            failures.append("the device-side record is not listed as a comment: %s" % proc.stdout)
        open(supp, "w").write(proc.stdout)
        proc, doc = report(tmp, "--suppressions", supp)
        by_api = {f["api"]: f for f in doc["findings"]} if doc else {}
        if not by_api or not by_api["cudaMalloc"]["suppressed"] or by_api["cudaMallocHost"]["suppressed"]:
            failures.append("the imported rule must silence the process_batch leak and only it")
        if proc.returncode != 3 or "leak:{cs.xml record 1}" not in proc.stderr:
            failures.append("the upload leak still gates, and the table names the block: exit %d" % proc.returncode)

        # A block of valgrind's form with a limit: both leaks pass through main, one is hidden.
        open(supp, "w").write("{\n  one leak under main\n  leak\n  max-hits: 1\n  ...\n  fun:main\n}\n")
        proc, doc = report(tmp, "--suppressions", supp)
        hidden = [f["api"] for f in doc["findings"] if f["suppressed"]] if doc else []
        if len(hidden) != 1 or proc.returncode != 3:
            failures.append("max-hits 1 hid %s (exit %d), expected one leak hidden and one gating" % (hidden, proc.returncode))
        if "leak:{one leak under main} (max-hits 1, 1 more reported)" not in proc.stderr:
            failures.append("the table does not say the limit was reached: %s" % proc.stderr)

        proc, _ = report(tmp, "--suppressions", xml)
        if proc.returncode != 2 or "cuaudit suppressions import" not in proc.stderr:
            failures.append("--suppressions cs.xml: exit %d, %s" % (proc.returncode, proc.stderr))
        for args, why in [((supp,), "not XML"), ((os.path.join(tmp, "missing.xml"),), "missing"),
                          ((tmp,), "a directory")]:
            proc = run("suppressions", "import", *args)
            if proc.returncode != 2 or "cuaudit: " not in proc.stderr:
                failures.append("import of a file %s: exit %d, %s" % (why, proc.returncode, proc.stderr))
        proc = run("suppressions", "export", xml)
        if proc.returncode != 2:
            failures.append("`suppressions export` is not refused (exit %d)" % proc.returncode)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
