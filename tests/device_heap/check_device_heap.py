#!/usr/bin/env python3
"""--device-heap end to end without a GPU: the real launcher, injection and tool, with the stand-in
Sanitizer API library (sanitizer_standin.cpp) calling the injection's callbacks as the real one did
on the H200, and device_heap_program.cpp playing the probe's kernels. The report must group the
1,024 leaked nodes at their device code location and launch site, find the double free, the invalid
free and the exhausted heap, keep the host cudaMalloc leak, and say what this mode does not see."""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--standin", required=True)
    opts = ap.parse_args()
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        report_path = os.path.join(tmp, "report.json")
        env = dict(os.environ, CUAUDIT_SANITIZER_LIBRARY=opts.standin)
        run = subprocess.run([opts.cuaudit, "--device-heap", "--error-exitcode", "9", "--json", report_path, "--",
                              opts.program],
                             env=env, capture_output=True, text=True, timeout=120)
        if not os.path.exists(report_path):
            print("FAIL: no report (exit %d)\n%s\n%s" % (run.returncode, run.stdout[-3000:], run.stderr[-3000:]))
            return 1
        report = json.load(open(report_path))
        text = run.stdout + run.stderr
        # Without the library the launcher says what to do.
        missing = subprocess.run([opts.cuaudit, "--device-heap", "--", opts.program],
                                 env=dict(os.environ, CUAUDIT_SANITIZER_LIBRARY=os.path.join(tmp, "none.so")),
                                 capture_output=True, text=True, timeout=60)
    findings = {}
    for f in report["findings"]:
        findings.setdefault(f["kind"], []).append(f)

    def expect(cond, what):
        if not cond:
            problems.append(what)

    leaks = findings.get("device_heap_leak", [])
    expect(len(leaks) == 1, "expected one device_heap_leak site, got %d" % len(leaks))
    if leaks:
        leak = leaks[0]
        expect(leak["count"] == 1024 and leak["bytes"] == 16384, "leak: %s allocations, %s bytes" % (leak["count"], leak["bytes"]))
        note = " ".join(leak["notes"])
        expect("leak_nodes(int)+0x1f0" in note, "leak's device location not named: %s" % note)
        expect("launched 4 time(s) at " in note and "device_heap_program.cpp:" in note, "leak's launch site not named: %s" % note)
        expect(any("leak_nodes" in (fr.get("function") or "") for fr in leak["stack"]),
               "leak's stack does not hold the launching function: %s" % leak["stack"][:3])
    for kind, count, place in (("device_heap_double_free", 1, "free_twice(void*)+0x90"),
                               ("device_heap_invalid_free", 1, "free_twice(void*)+0xd0"),
                               ("device_heap_exhausted", 1, "exhaust(void**)+0x60")):
        got = findings.get(kind, [])
        expect(len(got) == 1 and got[0]["count"] == count, "%s: expected one finding of %d, got %s" % (kind, count, [g["count"] for g in got]))
        expect(got and place in " ".join(got[0]["notes"]), "%s not placed at %s: %s" % (kind, place, got and got[0]["notes"]))
    host = [f for f in findings.get("leak", []) if f["api"] == "cudaMalloc"]
    expect(len(host) == 1 and host[0]["bytes"] == 1 << 20, "expected the host cudaMalloc leak of 1 MiB, got %s" % [(f["api"], f["bytes"]) for f in findings.get("leak", [])])
    scratch = [f for f in report["findings"] if "alloc_free" in json.dumps(f)]
    expect(not scratch, "the freed scratch of alloc_free was reported: %s" % scratch)
    notes = " ".join(report["processes"][0]["notes"])
    expect("device-heap mode" in notes and "not checked" in notes, "the report does not say what the mode misses: %s" % notes)
    expect("Device heap leak: 1024 allocation(s) of 16 B" in text, "the text report lacks the leak's headline")
    expect("LEAK SUMMARY: 1064960 byte(s) leaked in 1025 allocation(s) from 2 site(s)" in text,
           "the leak summary does not count the device heap's leak")
    expect(run.returncode == 9, "the leak gate gave %d, expected 9" % run.returncode)
    expect(missing.returncode != 0 and "CUAUDIT_SANITIZER_LIBRARY" in missing.stderr,
           "a missing library is not explained: %s" % missing.stderr[-500:])
    if problems:
        print("FAIL: " + "\n  ".join(problems))
        print(text[-4000:])
        return 1
    print("PASS device_heap.end_to_end: 1024 leaked nodes at one site, double/invalid free, exhausted heap, host leak")
    return 0


if __name__ == "__main__":
    sys.exit(main())
