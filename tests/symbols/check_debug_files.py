#!/usr/bin/env python3
"""Separate debug files, end to end: a trace whose leak runs through a library's internal function
(written by the real recorder, no CUDA needed) is reported with the library stripped, and

  - without its debug file: the frame has no name and the report's note says what would give it one
    (the .build-id path, --debug-file-directory, DEBUGINFOD_URLS);
  - with --debug-file-directory DIR holding DIR/.build-id/ab/cdef.debug: named, file and line;
  - with the debug file where the library's .gnu_debuglink points (its .debug folder): named;
  - with the library gone from this machine: named from the debug file by the recorded build id;
  - from a real debuginfod server (elfutils' `debuginfod -F`, on loopback) through DEBUGINFOD_URLS;
and the frames of libc's qsort that called the second leak's comparator are named from Debian's
libc6-dbg (/usr/lib/debug/.build-id), as any distribution's debug package is read.
Each report reads its own copy of the run, so no symbol cache carries a name from one case to the next."""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

FUNCTION = "allocate_in_library"


def build_id(path):
    notes = subprocess.run(["readelf", "--notes", path], capture_output=True, text=True, check=True).stdout
    found = re.search(r"Build ID: ([0-9a-f]+)", notes)
    if not found:
        sys.exit("FAIL: %s has no build id" % path)
    return found.group(1)


def marker_line(source, marker):
    with open(source) as f:
        for number, line in enumerate(f, 1):
            if marker in line:
                return number
    sys.exit("FAIL: no %s in %s" % (marker, source))


def report(cuaudit, run, *options, env=None):
    proc = subprocess.run([cuaudit, "report", run, "--json", "-", "--log-file", "/dev/null", *options],
                          capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode not in (0, 1):  # 1: the leak gates
        sys.exit("FAIL: cuaudit report %s exited %d: %s" % (" ".join(options), proc.returncode, proc.stderr))
    return json.loads(proc.stdout)


def module_frames(doc, library_name):
    """The frames in `library_name` of the leak whose stack goes through it."""
    leaks = [f for f in doc["findings"] if f["kind"] == "leak"]
    if len(leaks) != 2:
        sys.exit("FAIL: expected the two leaks, got %s" % [f["kind"] for f in doc["findings"]])
    for leak in leaks:
        frames = [fr for fr in leak["stack"] if os.path.basename(fr.get("module") or "") == library_name]
        if frames:
            return frames
    sys.exit("FAIL: no frame of %s in the leaks' stacks: %s" % (library_name, [f["stack"] for f in leaks]))


def library_frame(doc, library_name):
    return module_frames(doc, library_name)[0]


def expect_named(case, doc, library_name, line):
    frame = library_frame(doc, library_name)
    if FUNCTION not in (frame.get("function") or "") or not (frame.get("file") or "").endswith("debug_file_library.cpp") \
            or frame.get("line") != line:
        sys.exit("FAIL (%s): the library's frame is %s, expected %s at debug_file_library.cpp:%d" %
                 (case, frame, FUNCTION, line))
    stale = [n for n in doc["notes"] if "no symbols for" in n]
    if stale:
        sys.exit("FAIL (%s): a module-without-symbols note remains: %s" % (case, stale))
    print("ok: %s: %s at %s:%d" % (case, frame["function"], os.path.basename(frame["file"]), frame["line"]))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served(url, deadline):
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return True
        except Exception:
            pass
        time.sleep(0.5)
    return False


def debuginfod_case(args, work, fresh_run, library_name, debug_file, line):
    server = shutil.which("debuginfod")
    if not server:
        sys.exit("FAIL: elfutils' debuginfod server is not installed (scripts/install-deps.sh installs it)")
    served_dir = os.path.join(work, "served")
    os.makedirs(served_dir)
    shutil.copy(debug_file, os.path.join(served_dir, "library.debug"))
    port = free_port()
    log = open(os.path.join(work, "debuginfod.log"), "w")
    proc = subprocess.Popen([server, "-F", served_dir, "-p", str(port), "-d", os.path.join(work, "index.sqlite"),
                             "-t", "1"], stdout=log, stderr=subprocess.STDOUT)
    try:
        url = "http://127.0.0.1:%d" % port
        if not served("%s/buildid/%s/debuginfo" % (url, build_id(debug_file)), time.time() + 60):
            log.flush()
            sys.exit("FAIL: debuginfod never served the debug file: %s" % open(log.name).read()[-2000:])
        env = dict(os.environ, DEBUGINFOD_URLS=url, DEBUGINFOD_CACHE_PATH=os.path.join(work, "client-cache"))
        expect_named("from debuginfod", report(args.cuaudit, fresh_run(), env=env), library_name, line)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def libc_case(doc):
    """qsort's own frames, named from the distribution's debug file of libc (libc6-dbg)."""
    libc = [fr for fr in module_frames(doc, "libc.so.6")]
    ident = build_id(libc[0]["module"])
    packaged = "/usr/lib/debug/.build-id/%s/%s.debug" % (ident[:2], ident[2:])
    if not os.path.exists(packaged):
        sys.exit("FAIL: %s is missing: install libc6-dbg (scripts/install-deps.sh does)" % packaged)
    named = [fr for fr in libc if fr.get("file") and fr.get("line")]
    if not named or not any("qsort" in (fr.get("function") or "") for fr in libc):
        sys.exit("FAIL: libc's frames were not named from %s: %s" % (packaged, libc))
    print("ok: libc from libc6-dbg: %s" % ", ".join("%s %s:%d" % (fr["function"], os.path.basename(fr["file"]),
                                                                     fr["line"]) for fr in named))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuaudit", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--library", required=True)
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    line = marker_line(args.source, "@library-call")
    library_name = os.path.basename(args.library)
    with tempfile.TemporaryDirectory() as work:
        bin_dir = os.path.join(work, "bin")
        os.makedirs(bin_dir)
        program = shutil.copy(args.program, bin_dir)
        library = shutil.copy(args.library, bin_dir)
        # As a distribution ships it: the DWARF in a file of its own, the library stripped to its
        # dynamic symbols, a .gnu_debuglink naming the debug file.
        debug_file = os.path.join(work, library_name + ".debug")
        subprocess.run(["objcopy", "--only-keep-debug", library, debug_file], check=True)
        subprocess.run(["objcopy", "--strip-all", "--add-gnu-debuglink=" + debug_file, library], check=True)
        ident = build_id(library)

        run = os.path.join(work, "run")
        env = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
        proc = subprocess.run([args.cuaudit, "--save", run, "--log-file", "/dev/null", "--", program],
                              capture_output=True, text=True, env=env, timeout=120)
        if proc.returncode not in (0, 1):
            sys.exit("FAIL: cuaudit %s exited %d: %s" % (program, proc.returncode, proc.stderr))
        pristine = os.path.join(work, "pristine")
        shutil.copytree(run, pristine)
        copies = iter(range(100))

        def fresh_run():
            copy = os.path.join(work, "run-%d" % next(copies))
            shutil.copytree(pristine, copy)
            return copy

        # Stripped, no debug file anywhere: no name, and the note says what would give one.
        doc = report(args.cuaudit, fresh_run(), env=env)
        frame = library_frame(doc, library_name)
        if FUNCTION in (frame.get("function") or ""):
            sys.exit("FAIL: the stripped library's internal frame was named without its debug file: %s" % frame)
        notes = [n for n in doc["notes"] if "no symbols for " + library in n]
        wanted = [".build-id/%s/%s.debug" % (ident[:2], ident[2:]), "--debug-file-directory", "DEBUGINFOD_URLS",
                  "-dbgsym", "no debug information"]
        if len(notes) != 1 or any(w not in notes[0] for w in wanted):
            sys.exit("FAIL: expected one note on %s naming %s, got %s" % (library, wanted, doc["notes"]))
        print("ok: stripped: unnamed, and the note says: %s" % notes[0])
        libc_case(doc)

        debug_dir = os.path.join(work, "debug")
        by_id = os.path.join(debug_dir, ".build-id", ident[:2], ident[2:] + ".debug")
        os.makedirs(os.path.dirname(by_id))
        shutil.copy(debug_file, by_id)
        expect_named("--debug-file-directory", report(args.cuaudit, fresh_run(), "--debug-file-directory", debug_dir,
                                                      env=env), library_name, line)

        beside = os.path.join(bin_dir, ".debug")
        os.makedirs(beside)
        shutil.copy(debug_file, beside)
        expect_named(".gnu_debuglink", report(args.cuaudit, fresh_run(), env=env), library_name, line)
        shutil.rmtree(beside)

        os.remove(library)
        expect_named("library gone, by build id", report(args.cuaudit, fresh_run(), "--debug-file-directory",
                                                         debug_dir, env=env), library_name, line)
        doc = report(args.cuaudit, fresh_run(), env=env)
        if not any("not found here" in n and "--debug-file-directory" in n for n in doc["notes"]):
            sys.exit("FAIL: a library gone without a debug file should say what would name it: %s" % doc["notes"])

        debuginfod_case(args, work, fresh_run, library_name, debug_file, line)
    print("PASS")


if __name__ == "__main__":
    main()
