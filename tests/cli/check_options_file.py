#!/usr/bin/env python3
"""The project's options file, as valgrind users keep a ./.valgrindrc: a .cuauditrc in the working
directory or above sets options before CUAUDIT_OPTIONS and the command line (which override it),
the report says where they came from, merge and diff take the ones they know, a file others could
write is passed over with a warning, and CUAUDIT_OPTIONS_FILE chooses another file or none."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from golden_run import checker_arguments, finish


def main():
    opts = checker_arguments()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "project", "build")
        os.makedirs(work)
        golden = os.path.join(tmp, "run")  # a copy: a report keeps what it resolved beside the trace
        shutil.copytree(opts.golden, golden)
        cuaudit = os.path.abspath(opts.cuaudit)
        rc = os.path.join(tmp, "project", ".cuauditrc")
        out = os.path.join(tmp, "r.json")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CUAUDIT_OPTIONS")}

        def run(*args, **extra):
            return subprocess.run([cuaudit] + list(args), cwd=work, env=dict(env, **extra), capture_output=True,
                                  text=True)

        open(rc, "w").write("# the project's CI gate\n--error-exitcode 9\n--leak-check full\n")
        os.chmod(rc, 0o644)
        proc = run("report", golden, "--json", out)
        if proc.returncode != 9 or "options from %s: --error-exitcode 9 --leak-check full" % rc not in proc.stderr:
            failures.append("the file's gate: exit %d, %s" % (proc.returncode, proc.stderr[:300]))
        doc = json.load(open(out))
        if doc["options"].get("file") != {"path": rc, "options": ["--error-exitcode", "9", "--leak-check", "full"]}:
            failures.append("the JSON report's options: %s" % doc["options"])
        proc = run("report", golden, "-q", CUAUDIT_OPTIONS="--error-exitcode 5")
        if proc.returncode != 5:
            failures.append("CUAUDIT_OPTIONS must override the file: exit %d" % proc.returncode)
        proc = run("report", golden, "-q", "--error-exitcode", "4", CUAUDIT_OPTIONS="--error-exitcode 5")
        if proc.returncode != 4:
            failures.append("the command line must override both: exit %d" % proc.returncode)

        # merge and diff: the file's --error-exitcode applies, its --suppressions (theirs not) is left out.
        open(rc, "w").write("--error-exitcode 7 --suppressions no-such.supp --print-limit 3\n")
        proc = run("merge", out)
        if proc.returncode != 7:
            failures.append("merge with the file: exit %d, %s" % (proc.returncode, proc.stderr[:300]))
        proc = run("diff", out, out)
        if proc.returncode != 0 or "unknown option" in proc.stderr:
            failures.append("diff with the file: exit %d, %s" % (proc.returncode, proc.stderr[:300]))

        os.chmod(rc, 0o666)  # anyone may write it: not the project's word
        proc = run("report", golden, "-q")
        if proc.returncode != 0 or "%s was not read" % rc not in proc.stderr:
            failures.append("a file others can write is read: exit %d, %s" % (proc.returncode, proc.stderr[:300]))
        os.chmod(rc, 0o644)
        proc = run("report", golden, "-q", CUAUDIT_OPTIONS_FILE="")
        if proc.returncode != 0:
            failures.append("CUAUDIT_OPTIONS_FILE= must read no file: exit %d" % proc.returncode)
        other = os.path.join(tmp, "ci.opts")
        open(other, "w").write("--error-exitcode 3\n")
        proc = run("report", golden, "-q", CUAUDIT_OPTIONS_FILE=other)
        if proc.returncode != 3:
            failures.append("CUAUDIT_OPTIONS_FILE=ci.opts: exit %d" % proc.returncode)
        open(rc, "w").write("--error-exitcode 'nine\n")
        proc = run("report", golden, "-q")
        if proc.returncode != 2 or rc + ": unterminated" not in proc.stderr:
            failures.append("a file that cannot be read as words: exit %d, %s" % (proc.returncode, proc.stderr[:300]))
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
