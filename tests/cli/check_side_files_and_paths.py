#!/usr/bin/env python3
"""The reliability review of 2026-12-04, F14: a run directory's side files are never read through a
planted link (whose target's first bytes a note would show), and a path cuaudit prints in a command
to paste comes out as one shell word, whatever characters it holds.

  check_side_files_and_paths.py CUAUDIT GOLDEN_RUN [--tool-only]"""
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(name, ok, detail=""):
    print("%s %s" % ("PASS" if ok else "FAIL", name))
    if not ok:
        failures.append(name)
        print("  " + str(detail)[:2000])


def linked_side_files(cu, golden, tmp):
    secret = os.path.join(tmp, "shadow")
    open(secret, "w").write("root:$6$SECRETHASH:19000\n")
    run = os.path.join(tmp, "linked")
    shutil.copytree(golden, run)
    for name in ("symbols.json", "call_sites.json"):
        path = os.path.join(run, name)
        if os.path.exists(path):
            os.remove(path)
        os.symlink(secret, path)
    proc = subprocess.run([cu, "report", run], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.decode(errors="replace")
    check("F14: a linked cache is not read: said, and nothing of its target shown",
          "symbolic link" in out and "last read" not in out and "SECRET" not in out, out[-1500:])
    check("F14: the link is left as it was (not written through)",
          os.path.islink(os.path.join(run, "symbols.json")) and open(secret).read().startswith("root:"))


def saved_path_with_newline(cu, golden, tmp):
    save = os.path.join(tmp, "save dir\nx")
    trace = next(f for f in os.listdir(golden) if f.endswith(".cutrace"))
    script = 'cp "%s" "$CUAUDIT_TRACE_DIR"/' % os.path.join(golden, trace)
    proc = subprocess.run([cu, "--require-cuda-init", "no", "--save", save, "--log-file", os.devnull,
                           "sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = proc.stderr.decode(errors="replace")
    line = next((l for l in err.splitlines() if "analyze it again with" in l), "")
    check("F14: the saved run's path is one shell word ($'...') in the command to paste",
          "$'" in line and line.endswith(")") and not any(l.startswith("x") for l in err.splitlines()), err[-1500:])
    word = line.split("cuaudit report ", 1)[-1][:-1]
    back = subprocess.run(["bash", "-c", "printf %s " + word], stdout=subprocess.PIPE).stdout.decode()
    check("F14: bash reads the printed path back as the directory", back == save, repr(back))


def main():
    cu, golden = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="cuaudit-paths-")
    try:
        linked_side_files(cu, golden, tmp)
        if "--tool-only" not in sys.argv:
            saved_path_with_newline(cu, golden, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
