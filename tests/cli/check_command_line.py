#!/usr/bin/env python3
"""A command line that never surprises (issue 35): options before a command, `cuaudit help
[COMMAND]`, "did you mean" for a mistyped command or option, placeholders and names as the usage
lines write them, counts that cannot be negative, a missing input path as a usage error (2), and
"-" for standard output. Runs without a GPU, on the golden demo run."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []
passes = []


def run(args, cwd=None):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)


def check(name, ok, detail=""):
    print("%s %s" % ("PASS" if ok else "FAIL", name))
    (passes if ok else failures).append(name)
    if not ok and detail:
        print("  " + detail.strip().replace("\n", "\n  ")[:1500])


def expect(name, proc, status, text=None, absent=None):
    said = proc.stdout + proc.stderr
    ok = proc.returncode == status and (text is None or text in said) and (absent is None or absent not in said)
    check("%s (exit %d)" % (name, proc.returncode), ok,
          "expected exit %d%s%s\n%s" % (status, " and %r" % text if text else "",
                                       " without %r" % absent if absent else "", said))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--tool-only", action="store_true", help="a CUAUDIT_TOOL_ONLY build: programs are not run")
    a = ap.parse_args()
    cu, golden = os.path.abspath(a.cuaudit), a.golden
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, "run")
        shutil.copytree(golden, run_dir)  # reports write caches beside the trace: never into the golden run
        after = run([cu, "report", "--leak-check", "summary", "-q", run_dir])
        before = run([cu, "-q", "--leak-check", "summary", "report", run_dir])
        check("options before the command: `cuaudit -q --leak-check summary report RUN` as `cuaudit report ... RUN`",
              before.returncode == after.returncode and before.stderr == after.stderr and "LEAK SUMMARY" in before.stderr,
              "before: exit %d\n%s\nafter: exit %d\n%s" % (before.returncode, before.stderr, after.returncode, after.stderr))
        expect("`cuaudit --num-callers=5 --error-exitcode 7 report RUN` takes both options",
               run([cu, "--num-callers=5", "--error-exitcode", "7", "report", run_dir]), 7)
        expect("`cuaudit help` prints the usage", run([cu, "help"]), 0, "Usage: cuaudit [options] [--] program")
        expect("`cuaudit help report` prints the report command's help", run([cu, "help", "report"]), 0,
               "Usage: cuaudit report [options] RUN_DIR")
        expect("`cuaudit help repot` suggests report", run([cu, "help", "repot"]), 2, "did you mean report?")
        if not a.tool_only:
            expect("`cuaudit repot RUN` suggests the report command", run([cu, "repot", run_dir]), 127,
                   "did you mean `cuaudit report`?")
        expect("-v suggests -V, not -h", run([cu, "-v"]), 2, "did you mean -V?")
        expect("an option merge lacks, after one it has, is the one named",
               run([cu, "merge", os.path.join(tmp, "a.json"), "--json", os.path.join(tmp, "m.json"), "--perfetto",
                    os.path.join(tmp, "p.json")]), 2, "unknown option --perfetto", absent="unknown option --json")
        expect("a missing run directory is named as the usage line names it", run([cu, "report"]), 2,
               "RUN_DIR is required", absent="run_dir")
        expect("a negative --print-limit is refused in words", run([cu, "report", "--print-limit", "-1", run_dir]), 2,
               "expected a count, 0 or more")
        expect("a missing run directory is a bad command line", run([cu, "report", os.path.join(tmp, "nope")]), 2,
               "No such file or directory")
        expect("a file given as the run directory is a bad command line",
               run([cu, "report", os.path.join(run_dir, "run.json")]), 2, "is not a directory")
        expect("a missing report to merge is a bad command line", run([cu, "merge", os.path.join(tmp, "nope.json")]),
               2, "No such file or directory")
        expect("a missing report to diff is a bad command line",
               run([cu, "diff", os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")]), 2, "No such file")
        expect("a missing --baseline is a bad command line",
               run([cu, "report", "--baseline", os.path.join(tmp, "nope.json"), run_dir]), 2, "--baseline")
        out = run([cu, "report", "--json", "-", "--leak-check", "summary", run_dir], cwd=tmp)
        try:
            findings = len(json.loads(out.stdout)["findings"])
        except ValueError:
            findings = None
        check("`--json -` writes the JSON report to standard output, and no file named '-'",
              out.returncode == 0 and findings is not None and not os.path.exists(os.path.join(tmp, "-")),
              "exit %d, stdout %r, stderr %s" % (out.returncode, out.stdout[:200], out.stderr))
        text = run([cu, "report", "--log-file", "-", run_dir], cwd=tmp)
        check("`--log-file -` writes the text report to standard output",
              "LEAK SUMMARY" in text.stdout and "LEAK SUMMARY" not in text.stderr, text.stderr)
        if not a.tool_only:
            # --mode watch does no launch checks; the sampling sizes belong to it (refused before any program runs).
            expect("--mode watch with --check-launch-params yes is refused",
                   run([cu, "--mode", "watch", "--check-launch-params", "yes", "true"]), 2, "does no launch checks")
            expect("--stack-sample-bytes without --mode watch is refused",
                   run([cu, "--stack-sample-bytes", "1M", "true"]), 2, "need --mode watch")
            expect("--trace-compact-bytes without --mode watch is refused",
                   run([cu, "--trace-compact-bytes", "64M", "true"]), 2, "needs --mode watch")
            expect("--trace-compact-bytes takes a size",
                   run([cu, "--mode", "watch", "--trace-compact-bytes", "lots", "true"]), 2, "expected a size")
            expect("a size that is none is refused in words",
                   run([cu, "--mode", "watch", "--stack-sample-bytes", "1MB", "true"]), 2, "expected a size such as 512K")
            expect("--stack-sample-bytes 0 is refused (0 bytes between samples is no sample)",
                   run([cu, "--mode", "watch", "--stack-sample-bytes", "0", "true"]), 2, "expected a size")
        if not a.tool_only:
            # Watch mode samples the timeline once a second and keeps a shorter PyTorch history unless
            # told (docs/LONG_RUNNING.md); sh makes no CUDA call, so nothing is tracked (exit 122).
            show = ["sh", "-c", "echo interval=$CUAUDIT_SAMPLE_INTERVAL_MS history=$CUAUDIT_TORCH_HISTORY_ENTRIES."]
            os.environ.pop("CUAUDIT_TORCH_HISTORY_ENTRIES", None)
            for args, want in (([], "interval=10 history=."), (["--mode", "watch"], "interval=1000 history=10000."),
                               (["--mode", "watch", "--sample-interval", "50"], "interval=50 history=10000.")):
                expect("the program is given %s with %s" % (want, " ".join(args) or "no option"),
                       run([cu, "-q"] + args + show), 122, want)
            os.environ["CUAUDIT_TORCH_HISTORY_ENTRIES"] = "500"
            expect("the user's own PyTorch history setting stays in watch mode",
                   run([cu, "-q", "--mode", "watch"] + show), 122, "history=500.")
            del os.environ["CUAUDIT_TORCH_HISTORY_ENTRIES"]
        helps = "".join(run([cu] + c + ["--help"]).stdout for c in ([], ["report"], ["merge"], ["diff"]))
        for placeholder in ("--json FILE", "--save DIR", "--print-limit N", "--path-map OLD=NEW",
                            "--churn-threshold PERCENT", "--sample-interval MS", "--kernel-name TEXT",
                            "--stack-sample-bytes SIZE", "--mode TEXT:{check,watch}"):
            check("--help shows %s" % placeholder, placeholder in helps)
        check("--help shows no UINT or TEXT placeholder for a file, a directory or a count",
              all(bad not in helps for bad in ("--json TEXT", "--save TEXT", "UINT", "--log-file TEXT")))
    print("%d passed, %d failed" % (len(passes), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
