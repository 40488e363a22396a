#!/usr/bin/env python3
"""Bad input gets a clear answer and a documented exit status (docs/EXIT_CODES.md). Runs
without a GPU: programs here never initialize CUDA."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

failures = []
passes = []


def run(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def expect(name, proc, status, text=None):
    ok = proc.returncode == status and (text is None or text in proc.stderr)
    print("%s %s (exit %d)" % ("PASS" if ok else "FAIL", name, proc.returncode))
    if ok:
        passes.append(name)
    if not ok:
        failures.append(name)
        print("  expected exit %d%s\n  stderr: %s" % (status, " and %r" % text if text else "", proc.stderr.strip()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--tool-only", action="store_true", help="a CUAUDIT_TOOL_ONLY build: `run` is refused")
    cu = ap.parse_args().cuaudit
    golden = ap.parse_args().golden
    if ap.parse_args().tool_only:
        expect("a tool-only build refuses to run programs, saying why", run([cu, "true"]), 125,
               "built without the CUDA toolkit")
        expect("a tool-only build reports", run([cu, "report", "--error-exitcode", "3", golden]), 3)
        print("%d passed, %d failed" % (len(passes), len(failures)))
        return 1 if failures else 0
    with tempfile.TemporaryDirectory() as tmp:
        # A copy: a report may write caches into the run it reads, never into the checkout's goldens.
        golden = shutil.copytree(golden, os.path.join(tmp, "golden-run"))
        expect("program not found", run([cu, "./no-such-program"]), 127, "no such file")
        expect("command not in PATH", run([cu, "no-such-command-xyz"]), 127, "command not found")
        script = os.path.join(tmp, "not-executable.sh")
        open(script, "w").write("#!/bin/sh\n")
        expect("program not executable", run([cu, script]), 126, "not executable")
        expect("directory as program", run([cu, tmp]), 126, "is a directory")
        marker = os.path.join(tmp, "started")
        proc = run([cu, "--json", "/nonexistent-dir/r.json", "touch", marker])
        expect("unwritable --json refused", proc, 125, "does not exist")
        if os.path.exists(marker):
            failures.append("the program ran although its output path was unwritable")
        expect("no program", run([cu]), 2, "no program given")
        expect("bad option value", run([cu, "--leak-check", "maybe", "true"]), 2, "--leak-check")
        marker = os.path.join(tmp, "ran")
        expect("a misspelled option is refused, never run as the program",
               run([cu, "--leak-chek", "full", "touch", marker]), 2, "unknown option --leak-chek (did you mean --leak-check?)")
        if os.path.exists(marker):
            failures.append("a misspelled option let the program run")
        expect("an unknown option of report says what it is", run([cu, "report", "--jsn", "x", golden]), 2,
               "unknown option --jsn (did you mean --json?)")
        # Traps that would turn a CI gate green or its output to garbage: refused as bad usage.
        expect("an empty --keep-only (an unset variable) is refused, not a gate that passes",
               run([cu, "report", "--error-exitcode", "9", "--keep-only", "", golden]), 2, "--keep-only '' keeps nothing")
        expect("a keep rule that keeps nothing is said, whatever -q says (every finding was suppressed)",
               run([cu, "report", "-q", "--error-exitcode", "9", "--keep-only", "no_such_library/", golden]), 0,
               "no keep rule matched any finding, so all 2 finding(s) were suppressed")
        supp = os.path.join(tmp, "idle.supp")
        open(supp, "w").write("leak:no_such_function_anywhere\n")
        expect("a suppression that matched nothing is named",
               run([cu, "report", "--suppressions", supp, golden]), 0,
               "1 rule(s) matched nothing: leak:no_such_function_anywhere (%s:1)" % supp)
        expect("two outputs on standard output are refused",
               run([cu, "report", "--json", "-", "--sarif", "-", golden]), 2, "--json -, --sarif - would all write")
        metrics_port = run([cu, "--metrics", "localhost:9464", "--", "true"])
        expect("--metrics needs an IP address and says what to write", metrics_port, 2, "write HOST:PORT")
        version = run([cu, "-V"])
        ok = version.returncode == 0 and "commit" in version.stdout and "CUDA" in version.stdout
        print("%s -V prints the version, commit and CUDA version: %s" % ("PASS" if ok else "FAIL", version.stdout.strip()))
        (passes if ok else failures).append("-V")
        usage = run([cu, "--help"])
        ok = "cuaudit [options] [--] program [args...]" in usage.stdout and "report" in usage.stdout
        print("%s --help names the program argument and the commands" % ("PASS" if ok else "FAIL"))
        (passes if ok else failures).append("--help usage")
        report_help = run([cu, "report", "--help"])
        ok = "cuaudit report [options] RUN_DIR" in report_help.stdout and "126/127" not in report_help.stdout
        print("%s report --help has its own usage and exit statuses" % ("PASS" if ok else "FAIL"))
        (passes if ok else failures).append("report --help")
        env = dict(os.environ, CUAUDIT_OPTIONS="--error-exitcode 9 --leak-check summary")
        expect("CUAUDIT_OPTIONS sets defaults", run([cu, "report", golden], env=env), 9, "options from CUAUDIT_OPTIONS")
        expect("the command line overrides CUAUDIT_OPTIONS", run([cu, "report", "--error-exitcode", "4", golden], env=env), 4)
        expect("CUAUDIT_OPTIONS holds options, not a program",
               run([cu, "true"], env=dict(os.environ, CUAUDIT_OPTIONS="--error-exitcode 1 ./app")), 2, "options only")
        expect("CUAUDIT_OPTIONS with an unknown option", run([cu, "report", golden],
               env=dict(os.environ, CUAUDIT_OPTIONS="--eror-exitcode 1")), 2, "did you mean --error-exitcode?")
        expect("missing injection library", run([cu, "--injection-path", "/nonexistent.so", "true"]), 125,
               "does not exist")
        expect("no CUDA: nothing tracked is not a clean result", run([cu, "true"]), 122, "nothing could be tracked")
        expect("--require-cuda-init no keeps the program's status", run([cu, "--require-cuda-init", "no", "false"]), 1)
        expect("an empty program name is a bad command line", run([cu, ""]), 2, "no program given")
        # As a shell: a non-executable file earlier in PATH is passed over; a script without #! runs in sh.
        first, second = os.path.join(tmp, "p1"), os.path.join(tmp, "p2")
        os.makedirs(first)
        os.makedirs(second)
        open(os.path.join(first, "cuaudit-test-tool"), "w").write("#!/bin/sh\nexit 5\n")
        open(os.path.join(second, "cuaudit-test-tool"), "w").write("exit 7\n")  # no #!: sh runs it
        os.chmod(os.path.join(second, "cuaudit-test-tool"), 0o755)
        env = dict(os.environ, PATH="%s:%s:%s" % (first, second, os.environ.get("PATH", "")))
        expect("PATH: a non-executable file is passed over and a script without #! runs in sh",
               run([cu, "--require-cuda-init", "no", "cuaudit-test-tool"], env=env), 7)
        env = dict(os.environ, PATH="%s:%s" % (first, os.environ.get("PATH", "")))
        expect("PATH: only a non-executable file: 126", run([cu, "cuaudit-test-tool"], env=env), 126, "not executable")
        expect("report on a missing directory (a bad command line)", run([cu, "report", os.path.join(tmp, "nope")]), 2,
               "No such file or directory")
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        expect("report on a directory that is no run (the user's input, not cuaudit failing)",
               run([cu, "report", empty]), 2, "not a cuaudit run directory")
        expect("snapshot of a process cuaudit did not start (the user's input)",
               run([cu, "snapshot", str(os.getpid())]), 2, "is not running under cuaudit")
        foreign = os.path.join(tmp, "foreign")
        os.mkdir(foreign)
        open(os.path.join(foreign, "trace-1.cutrace"), "w").write("hello, not a trace\n")
        expect("report on a foreign trace", run([cu, "report", foreign]), 125, "is not a cuaudit trace")
        damaged = os.path.join(tmp, "damaged")
        shutil.copytree(golden, damaged)
        trace = [f for f in os.listdir(damaged) if f.endswith(".cutrace")][0]
        path = os.path.join(damaged, trace)
        os.truncate(path, os.path.getsize(path) - 100)
        proc = run([cu, "report", damaged])
        expect("report on a truncated trace says so, reports what it read and is not clean", proc, 123, "truncated")
        # One unreadable trace beside a good one: the good one is reported, the run is incomplete.
        extra = os.path.join(tmp, "extra")
        shutil.copytree(golden, extra)
        open(os.path.join(extra, "trace-9999.cutrace"), "w").close()
        proc = run([cu, "report", extra])
        expect("report with an empty child trace reports the others", proc, 123, "that process is not in this report")
        if "Leak of" not in proc.stderr:
            failures.append("the good trace beside an empty one was not reported")
        with open(os.path.join(extra, "run.json"), "r+") as f:
            f.truncate(60)
        expect("report with a damaged run.json still reports the traces", run([cu, "report", extra]), 123,
               "how the program ended is taken from its trace alone")
        # --output run-%p: the directory and its report.json are one name (cuaudit's pid).
        out_dir = os.path.join(tmp, "out")
        os.mkdir(out_dir)
        proc = run([cu, "--require-cuda-init", "no", "--output", "run-%p", "true"], cwd=out_dir)
        made = os.listdir(out_dir)
        if proc.returncode != 0 or len(made) != 1 or not os.path.exists(os.path.join(out_dir, made[0], "report.json")):
            failures.append("--output run-%p")
            print("FAIL --output run-%%p: exit %d, made %s: %s" % (proc.returncode, made, proc.stderr[-300:]))
        else:
            print("PASS --output run-%p keeps the run and its report.json together")
        expect("--output with an unset %q{VAR} is refused before the program runs",
               run([cu, "--output", "run-%q{CUAUDIT_SURELY_UNSET}", "true"]), 2, "is not set")
        saved = os.path.join(tmp, "saved")
        shutil.copytree(golden, saved)
        expect("--save into a directory holding a run", run([cu, "--save", saved, "true"]), 125,
               "already holds a recorded run")
        check_temporary_run_removed(cu, tmp)
    print("%d passed, %d failed" % (len(passes), len(failures)))
    return 1 if failures else 0


def check_temporary_run_removed(cu, tmp):
    """A run without --save leaves nothing behind: what the injection, the hooks and the tool write
    into the temporary run directory (kept code, PyTorch's blocks, caches, a link) all goes, and
    what a link there points to stays."""
    scratch = os.path.join(tmp, "tmpdir")
    os.mkdir(scratch)
    outside = os.path.join(tmp, "outside.txt")
    with open(outside, "w") as f:
        f.write("not the run's\n")
    script = ('d="$CUAUDIT_TRACE_DIR"; mkdir -p "$d/kernel-code/abc.elf" && : >"$d/kernel-code/0123.cubin" && '
              ': >"$d/kernel-code/abc.elf/x.cubin" && : >"$d/torch-blocks-1.json" && : >"$d/kernel-access.json" && '
              'ln -s %s "$d/link"' % outside)
    proc = run([cu, "--", "sh", "-c", script], env=dict(os.environ, TMPDIR=scratch))
    left = sorted(os.listdir(scratch))
    ok = proc.returncode != 125 and left == [] and os.path.exists(outside)
    print("%s a temporary run directory is removed whole (exit %d, left %s)" % ("PASS" if ok else "FAIL",
                                                                                proc.returncode, left))
    (passes if ok else failures).append("temporary run removed")


if __name__ == "__main__":
    sys.exit(main())
