#!/usr/bin/env python3
"""Runs and reports received from elsewhere, damaged or crafted, never fool cuaudit (issue 36; the
reliability review of 2026-12-01, defects E2-E18). Each check below failed before its fix. Always
on copies of the golden run (a report rewrites a run directory's caches)."""
import argparse
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time

failures = []
passes = []


def check(name, ok, detail=""):
    print("%s %s" % ("PASS" if ok else "FAIL", name))
    (passes if ok else failures).append(name)
    if not ok and detail:
        print("  " + str(detail).replace("\n", "\n  ")[:3000])


def run(cmd, cwd=None, timeout=120):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, 124, e.stdout or b"", (e.stderr or b"") + b"(timed out)")


class Runs:
    def __init__(self, cu, golden, tmp):
        self.cu, self.golden, self.tmp = cu, golden, tmp
        self.count = 0

    def copy(self):
        self.count += 1
        d = os.path.join(self.tmp, "run-%d" % self.count)
        shutil.copytree(self.golden, d)
        return d

    def with_symbols(self, fields):
        """A copy whose every symbol-cache location has `fields` (what a crafted run says)."""
        d = self.copy()
        run([self.cu, "report", d, "--log-file", os.devnull])  # writes symbols.json
        path = os.path.join(d, "symbols.json")
        doc = json.load(open(path))
        for module in doc["modules"].values():
            for entries in module.values():
                for location in entries:
                    location.update(fields)
        json.dump(doc, open(path, "w"))
        return d

    def trace(self, d):
        return next(os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".cutrace"))


def chunks(data):
    """(offset, length) of every chunk after the file header (FileHeader::header_size bytes)."""
    out, pos = [], struct.unpack_from("<I", data, 12)[0]
    while pos + 16 <= len(data):
        n = struct.unpack_from("<I", data, pos + 4)[0]
        out.append((pos, 16 + n))
        pos += 16 + n
    return out


def html_sources(r):
    """E2, E3: the page takes source lines only from where it may, and survives any line number."""
    secret_dir = os.path.join(r.tmp, "home")
    os.makedirs(secret_dir)
    secret = os.path.join(secret_dir, "id_rsa")
    open(secret, "w").write("".join("SECRET-LINE-%d\n" % n for n in range(1, 41)))
    d = r.with_symbols({"file": secret, "line": 4})
    page = os.path.join(r.tmp, "e2.html")
    proc = run([r.cu, "report", d, "--html", page], cwd=secret_dir)
    text = open(page).read() if os.path.exists(page) else ""
    check("E2: a received run's frames naming a file under the working directory put none of it in the page",
          proc.returncode == 0 and "SECRET-LINE" not in text, proc.stderr.decode()[-1500:])
    check("E2: ... and cuaudit says how to get source lines", b"--source-root" in proc.stderr, proc.stderr.decode())
    proc = run([r.cu, "report", d, "--html", page, "--source-root", secret_dir], cwd=secret_dir)
    check("E2: an explicit --source-root shows the lines under it",
          "SECRET-LINE-4" in open(page).read(), proc.stderr.decode()[-1500:])

    d = r.with_symbols({"line": 2147483644})
    page = os.path.join(r.tmp, "e3.html")
    proc = run([r.cu, "report", d, "--html", page, "--source-root", r.tmp], timeout=60)
    check("E3: a frame line near INT_MAX: --html ends at once", proc.returncode == 0 and os.path.exists(page),
          "exit %d %s" % (proc.returncode, proc.stderr.decode()[-800:]))


def report_json(r, d, *extra):
    out = os.path.join(r.tmp, "report-%d.json" % r.count)
    r.count += 1
    proc = run([r.cu, "report", d, "--json", out, "--log-file", os.devnull] + list(extra))
    doc = json.load(open(out)) if os.path.exists(out) else None
    return proc, doc


def fingerprints(r):
    """E4: frames without symbols are told apart by module and offset: a baseline of one leak
    site does not hide the others."""
    d = r.with_symbols({"function": None, "file": None, "line": None})
    _, every = report_json(r, d)
    leaks = [f for f in every["findings"] if f["kind"] == "leak"] if every else []
    check("E4: the unsymbolized golden run has several leak sites", len(leaks) >= 2, every and every["findings"])
    if len(leaks) < 2:
        return
    one = dict(every, findings=[leaks[0]])
    one_path = os.path.join(r.tmp, "one.json")
    all_path = os.path.join(r.tmp, "all.json")
    json.dump(one, open(one_path, "w"))
    json.dump(every, open(all_path, "w"))
    proc = run([r.cu, "diff", one_path, all_path, "--error-exitcode", "9"])
    check("E4: diff of one unsymbolized site against all calls the others new (exit 9)", proc.returncode == 9,
          "exit %d %s" % (proc.returncode, proc.stderr.decode()[-600:]))
    merged = os.path.join(r.tmp, "merged.json")
    run([r.cu, "merge", all_path, all_path, "--json", merged])
    doc = json.load(open(merged))
    check("E4: merge keeps unsymbolized sites apart", len(doc["findings"]) == len(every["findings"]),
          "%d findings, the report had %d" % (len(doc["findings"]), len(every["findings"])))


def duplicates(r):
    """E6: a chunk written twice is read once; a second trace of one process is not read."""
    d = r.copy()
    _, intact = report_json(r, d)
    d = r.copy()
    trace = r.trace(d)
    data = open(trace, "rb").read()
    pos, length = chunks(data)[-1]
    open(trace, "ab").write(data[pos:pos + length])
    proc, doc = report_json(r, d)
    same = doc and [(f["kind"], f["bytes"]) for f in doc["findings"]] == [(f["kind"], f["bytes"]) for f in intact["findings"]]
    check("E6: the last chunk appended again: the same findings", bool(same), doc and doc["findings"])
    check("E6: ... said, and the report incomplete (123)",
          proc.returncode == 123 and doc["incomplete"] and any("byte for byte" in n for n in doc["notes"] +
                                                                 [n for p in doc["processes"] for n in p["notes"]]),
          "exit %d, notes %s" % (proc.returncode, doc and doc["notes"]))
    d = r.copy()
    shutil.copy(r.trace(d), os.path.join(d, "trace-9999.cutrace"))
    proc, doc = report_json(r, d)
    check("E6: a copy of a trace under another pid's name does not double the leaks",
          doc and doc["summary"]["leaked_bytes"] == intact["summary"]["leaked_bytes"],
          doc and doc["summary"])
    check("E6: ... said, and the report incomplete (123)",
          proc.returncode == 123 and any("second trace of process" in n for n in doc["notes"]), doc and doc["notes"])


def cut_traces(r):
    """E8: a trace cut at a chunk boundary, or holding only its header, is damage."""
    d = r.copy()
    trace = r.trace(d)
    data = open(trace, "rb").read()
    pos, _ = chunks(data)[len(chunks(data)) // 2]
    open(trace, "wb").write(data[:pos])
    proc, doc = report_json(r, d)
    check("E8: cut at a chunk boundary although run.json says it exited: incomplete (123)",
          proc.returncode == 123 and doc["incomplete"], "exit %d" % proc.returncode)
    d = r.copy()
    open(os.path.join(d, "trace-8.cutrace"), "wb").write(data[:chunks(data)[0][0]])
    proc, doc = report_json(r, d)
    check("E8: a header-only trace beside the real one: incomplete (123)", proc.returncode == 123,
          "exit %d %s" % (proc.returncode, doc and doc["notes"]))


def unsaved_run_json(r):
    """F2: run.json cannot be written (a full disk; here a directory in its place) while the program's
    trace was cut at a chunk boundary: the launcher's account still catches the cut (123), and says why."""
    trace = r.trace(r.golden)
    save = os.path.join(r.tmp, "f2-run")
    # The program writes the golden trace cut after its first chunk, under its own pid, as a disk
    # that filled mid-run leaves it, and takes run.json's name first.
    program = ("import os, struct, sys; d = bytearray(open(sys.argv[1], 'rb').read()[:1648]); p = os.getpid(); "
               "struct.pack_into('<Q', d, 16, p); struct.pack_into('<Q', d, 48, p); "
               "t = os.environ['CUAUDIT_TRACE_DIR']; open(os.path.join(t, 'trace-%d.cutrace' % p), 'wb').write(d); "
               "os.mkdir(os.path.join(t, 'run.json'))")
    proc = run([r.cu, "--require-cuda-init", "no", "--save", save, "--json", os.path.join(r.tmp, "f2.json"),
                "--log-file", os.devnull, sys.executable, "-c", program, trace])
    doc = json.load(open(os.path.join(r.tmp, "f2.json"))) if os.path.exists(os.path.join(r.tmp, "f2.json")) else None
    notes = " ".join(doc["notes"]) if doc else ""
    check("F2: run.json unwritable and the trace cut at a chunk boundary: incomplete (123), not a clean run",
          proc.returncode == 123 and doc is not None and doc["incomplete"],
          "exit %d %s %s" % (proc.returncode, notes, proc.stderr.decode()[-500:]))
    check("F2: ... and the report says run.json could not be written", "disk may be full" in notes, notes)


def left_behind(r):
    """F1: a process the program leaves running (a worker started in the background) is reported as it
    was when the program ended, its memory live, not leaked, never as killed; the temporary run is kept
    for it, and reading it again once it has ended gives its whole account."""
    trace = r.trace(r.golden)
    # The worker writes the golden trace's first chunk under its own pid, then the rest 3 s later.
    worker = ("import os, struct, sys, time; d = bytearray(open(sys.argv[1], 'rb').read()); p = os.getpid(); "
              "struct.pack_into('<Q', d, 16, p); struct.pack_into('<Q', d, 48, p); "
              "path = os.path.join(os.environ['CUAUDIT_TRACE_DIR'], 'trace-%d.cutrace' % p); "
              "open(path, 'wb').write(d[:1648]); time.sleep(3); open(path, 'ab').write(d[1648:])")
    env = dict(os.environ, TMPDIR=r.tmp)
    out = os.path.join(r.tmp, "f1.json")
    proc = subprocess.run([r.cu, "--require-cuda-init", "no", "--json", out, "--log-file", os.devnull, "sh", "-c",
                           '"$0" -c "$1" "$2" & sleep 0.5', sys.executable, worker, trace],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    doc = json.load(open(out)) if os.path.exists(out) else {"findings": [], "notes": [], "processes": []}
    leaks = [f for f in doc["findings"] if f["kind"] == "leak"]
    check("F1: a worker still running when the program ends: exit 0, no leak reported for it",
          proc.returncode == 0 and not leaks, "exit %d, %d leak(s): %s" % (proc.returncode, len(leaks), proc.stderr))
    notes = " ".join(doc["notes"]) + " ".join(n for p in doc["processes"] for n in p.get("notes", []))
    check("F1: ... the report says it was left running, not killed",
          "left 1 process(es) running" in notes or "left 2 process(es) running" in notes, notes)
    check("F1: ... its process is not said to have ended without exit processing",
          "still running when the program ended" in notes and "ended without exit processing" not in notes, notes)
    kept = [line.split(" for them")[0].split("kept in ")[-1] for line in proc.stderr.splitlines() if "kept in" in line]
    check("F1: ... the temporary run is kept, and cuaudit says where", bool(kept) and os.path.isdir(kept[0]),
          proc.stderr)
    if kept and os.path.isdir(kept[0]):
        time.sleep(4)  # the worker has written its whole trace by now
        again = run([r.cu, "report", kept[0], "--json", os.path.join(r.tmp, "f1-again.json"), "--log-file", os.devnull])
        doc = json.load(open(os.path.join(r.tmp, "f1-again.json")))
        check("F1: ... read again once the worker has ended: its leaks, complete",
              again.returncode == 0 and not doc["incomplete"] and doc["summary"]["leaked_bytes"] == 344064,
              "exit %d %s" % (again.returncode, json.dumps(doc["summary"])))
        shutil.rmtree(kept[0], ignore_errors=True)


def version_and_header(r, golden_dir):
    """F9, F6: one flipped bit turning a checksummed trace's version into 1 is said (no longer read as
    an unchecked version-1 trace), and a header size other than the one its version writes is damage."""
    d = os.path.join(r.tmp, "f9-run")
    shutil.copytree(os.path.join(golden_dir, "cupy-grow-run"), d)
    trace = r.trace(d)
    data = bytearray(open(trace, "rb").read())
    data[8] ^= 2  # version 3 -> 1
    open(trace, "wb").write(data)
    proc, doc = report_json(r, d)
    check("F9: a version field flipped to 1 on a checksummed trace: incomplete (123), said",
          proc.returncode == 123 and doc and any("version field is damaged" in n for n in doc["notes"] +
                                                 [n for p in doc["processes"] for n in p.get("notes", [])]),
          "exit %d %s" % (proc.returncode, doc and doc["notes"]))
    d = r.copy()
    trace = r.trace(d)
    data = bytearray(open(trace, "rb").read())
    struct.pack_into("<I", data, 12, chunks(bytes(data))[1][0])  # the header's size set to the second chunk
    open(trace, "wb").write(data)
    proc = run([r.cu, "report", d, "--log-file", os.devnull])
    check("F6: a header size that skips the first chunk is a damaged header, not a shorter run",
          proc.returncode in (123, 125) and b"damaged header" in proc.stderr + proc.stdout,
          "exit %d %s" % (proc.returncode, proc.stderr.decode()[-300:]))


def output_limits(r):
    """F8, F13: a report past `ulimit -f` is cuaudit's failure (125, not SIGXFSZ's 153) and leaves the old
    file whole; two outputs of one file, or a report over the run's trace, are refused before any work."""
    d = r.copy()
    run([r.cu, "report", d, "--log-file", os.devnull])  # the caches, so that only the report is large
    out = os.path.join(r.tmp, "f8.json")
    open(out, "w").write("the previous report")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
    proc = subprocess.run([r.cu, "report", d, "--json", out, "--log-file", os.devnull], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, preexec_fn=limit)
    check("F8: a report past ulimit -f: 125 with a message, not 153", proc.returncode == 125 and
          b"cannot write" in proc.stderr, "exit %d %s" % (proc.returncode, proc.stderr.decode()[-500:]))
    check("F8: ... and the previous report is whole, not half of the new one",
          open(out).read() == "the previous report", open(out).read()[:200])
    same = os.path.join(r.tmp, "same.out")
    proc = run([r.cu, "report", d, "--json", same, "--html", same])
    check("F13: --json and --html of one file are refused (2)", proc.returncode == 2 and b"both write" in proc.stderr,
          "exit %d %s" % (proc.returncode, proc.stderr.decode()[-300:]))
    proc = run([r.cu, "report", d, "--json", r.trace(d)])
    check("F13: a report over the run's trace is refused (2), the trace kept",
          proc.returncode == 2 and open(r.trace(d), "rb").read(4) == open(r.trace(r.golden), "rb").read(4),
          "exit %d %s" % (proc.returncode, proc.stderr.decode()[-300:]))


def exit_codes(r):
    """E7, E9: --error-exitcode stays in 1-255; merge and diff keep an input's incompleteness."""
    d = r.copy()
    for value in ("256", "0", "-1", "512"):
        proc = run([r.cu, "report", d, "--error-exitcode", value])
        check("E7: --error-exitcode %s is refused (2)" % value, proc.returncode == 2, proc.stderr.decode()[-300:])
    trace = r.trace(d)
    size = os.path.getsize(trace)
    os.truncate(trace, size - 100)
    proc, doc = report_json(r, d)
    incomplete = os.path.join(r.tmp, "incomplete.json")
    json.dump(doc, open(incomplete, "w"))
    merged = os.path.join(r.tmp, "merged-incomplete.json")
    proc = run([r.cu, "merge", incomplete, "--json", merged])
    check("E9: merge of an incomplete rank: exit 123 and incomplete",
          proc.returncode == 123 and json.load(open(merged))["incomplete"], "exit %d" % proc.returncode)
    proc = run([r.cu, "diff", incomplete, incomplete])
    check("E9: diff of an incomplete report: exit 123", proc.returncode == 123, "exit %d" % proc.returncode)
    bad = os.path.join(r.tmp, "site-series.json")
    open(bad, "w").write('{"schema":"cuaudit.report.v1","timeline":{"site_series":5}}')
    proc = run([r.cu, "merge", bad])
    check("E18: a report whose site_series is a number: 125 naming the file and field",
          proc.returncode == 125 and b"site-series.json" in proc.stderr and b"site_series" in proc.stderr,
          proc.stderr.decode())


def hostile_text(r):
    """E12, E15: noncharacters and terminal controls from a run never reach the outputs raw."""
    d = r.with_symbols({"function": "x\ufffe\uffff \u202egnp.exe \u009b[2J \u2028forged"})
    xml = os.path.join(r.tmp, "r.xml")
    txt = os.path.join(r.tmp, "r.txt")
    proc = run([r.cu, "report", d, "--junit", xml, "--log-file", txt])
    try:
        import xml.dom.minidom
        xml.dom.minidom.parse(os.path.join(r.tmp, "r.xml"))
        valid = True
    except Exception as e:  # noqa: BLE001 - any parse error is the failure
        valid = str(e)
    check("E12: JUnit with U+FFFE/U+FFFF in names is valid XML", valid is True, valid)
    text = open(txt, "rb").read()
    check("E15: the text report escapes bidi overrides and C1 controls",
          "\u202e".encode() not in text and "\u009b".encode() not in text and b"\\u{202e}" in text,
          text[-600:])
    check("F14: ... and U+2028, which editors show as a line break", "\u2028".encode() not in text and
          b"\\u{2028}" in text, text[-600:])


def many_processes(r, make_trace):
    """E11: a run of 1,100 processes is read whole under ulimit -n 1024."""
    d = os.path.join(r.tmp, "many")
    os.makedirs(d)
    for i in range(1100):
        subprocess.run([make_trace, d, "20", "2", "2", "1", "warmup", str(20000 + i)], check=True,
                       stdout=subprocess.DEVNULL)
    proc = subprocess.run(["bash", "-c", 'ulimit -n 1024 && exec "$0" report "$1" --json "$2" --log-file /dev/null',
                           r.cu, d, os.path.join(r.tmp, "many.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    doc = json.load(open(os.path.join(r.tmp, "many.json"))) if os.path.exists(os.path.join(r.tmp, "many.json")) else {}
    check("E11: 1,100 traces under ulimit -n 1024: every process read, nothing lost",
          proc.returncode == 0 and len(doc.get("processes", [])) == 1100 and not doc.get("incomplete"),
          "exit %d, %d processes, %s" % (proc.returncode, len(doc.get("processes", [])), proc.stderr.decode()[-500:]))


def side_files(r):
    """E17: run.json's schema and numbers are checked, a damaged framework file is damage, reading
    a run leaves its caches as they were, and a directory that cannot be listed says so."""
    d = r.copy()
    path = os.path.join(d, "run.json")
    doc = json.load(open(path))
    json.dump(dict(doc, schema="cuaudit.run.v2"), open(path, "w"))
    proc, report = report_json(r, d)
    check("E17: run.json of another schema: damaged (123), said", proc.returncode == 123 and report and
          any("cuaudit.run.v1" in n for n in report["notes"]), report and report["notes"])
    json.dump(dict(doc, exit_code=99999999999), open(path, "w"))
    proc, report = report_json(r, d)
    check("E17: run.json with exit_code 99999999999: damaged (123), not wrapped", proc.returncode == 123,
          "exit %d" % proc.returncode)

    d = r.copy()
    open(os.path.join(d, "torch-blocks-1427.json"), "w").write('{"schema": "cuaudit.torch-blocks.v2", "live": [')
    proc, report = report_json(r, d)
    check("E17: a damaged PyTorch blocks file: incomplete (123)", proc.returncode == 123 and report["incomplete"],
          "exit %d, notes %s" % (proc.returncode, report and [n for p in report["processes"] for n in p["notes"]]))

    d = r.copy()
    run([r.cu, "report", d, "--log-file", os.devnull])
    caches = [os.path.join(d, f) for f in ("symbols.json", "call_sites.json") if os.path.exists(os.path.join(d, f))]
    before = [os.stat(f).st_mtime_ns for f in caches]
    ino = [os.stat(f).st_ino for f in caches]
    run([r.cu, "report", d, "--log-file", os.devnull])
    check("E17: a second report leaves the caches untouched (%d)" % len(caches),
          bool(caches) and before == [os.stat(f).st_mtime_ns for f in caches] and ino == [os.stat(f).st_ino for f in caches])

    if os.geteuid() != 0:  # root lists any directory
        d = r.copy()
        os.chmod(d, 0o311)
        proc = run([r.cu, "report", d])
        os.chmod(d, 0o755)
        check("E17: a run directory that cannot be listed: 125, saying so", proc.returncode == 125 and
              b"cannot list" in proc.stderr, proc.stderr.decode())


def planted_links(r):
    """E13: snapshots are not written through a planted link; --save refuses a directory others can write."""
    work = os.path.join(r.tmp, "snapshots")
    os.makedirs(work)
    victim = os.path.join(r.tmp, "victim")
    open(victim, "w").write("precious\n")
    os.symlink(victim, os.path.join(work, "cuaudit-snapshot-1.json"))
    trace = r.trace(r.golden)
    script = 'cp "%s" "$CUAUDIT_TRACE_DIR"/ && sleep 3' % trace
    proc = run([r.cu, "--require-cuda-init", "no", "--snapshot-interval", "1s", "--log-file", os.devnull,
                "sh", "-c", script], cwd=work)
    written = os.path.join(work, "cuaudit-snapshot-1.json")
    check("E13: --snapshot-interval replaces a planted link instead of writing through it",
          open(victim).read() == "precious\n" and os.path.isfile(written) and not os.path.islink(written),
          "exit %d, %s" % (proc.returncode, proc.stderr.decode()[-500:]))
    shared = os.path.join(r.tmp, "shared")
    os.makedirs(shared)
    os.chmod(shared, 0o777)
    proc = run([r.cu, "--require-cuda-init", "no", "--save", shared, "true"])
    check("E13: --save into a directory others can write is refused (125)",
          proc.returncode == 125 and b"writable by others" in proc.stderr, proc.stderr.decode())


def cut_after_the_run(r):
    """F3: the launcher notes each trace's size in run.json when the run ends; a trace found shorter
    later (an artifact upload or a copy cut short, at a chunk boundary) is said (123), even for a
    process whose records alone would look whole."""
    trace = r.trace(r.golden)
    save = os.path.join(r.tmp, "f3-run")
    program = ("import os, struct, sys; d = bytearray(open(sys.argv[1], 'rb').read()); p = os.getpid(); "
               "struct.pack_into('<Q', d, 16, p); struct.pack_into('<Q', d, 48, p); "
               "t = os.environ['CUAUDIT_TRACE_DIR']; open(os.path.join(t, 'trace-%d.cutrace' % p), 'wb').write(d)")
    proc = run([r.cu, "--require-cuda-init", "no", "--save", save, "--log-file", os.devnull, sys.executable, "-c",
                program, trace])
    info = json.load(open(os.path.join(save, "run.json"))) if os.path.exists(os.path.join(save, "run.json")) else {}
    sizes = info.get("trace_bytes", {})
    check("F3: run.json keeps each trace's size when the run ended",
          proc.returncode == 0 and sizes == {str(info.get("pid")): os.path.getsize(trace)},
          "exit %d %s %s" % (proc.returncode, sizes, proc.stderr.decode()[-300:]))
    saved = next(os.path.join(save, f) for f in os.listdir(save) if f.endswith(".cutrace"))
    data = open(saved, "rb").read()
    ends = [pos + length for pos, length in chunks(data)]
    open(saved, "wb").write(data[:ends[-2]])  # the last chunk gone, after the end record
    proc, doc = report_json(r, save)
    notes = " ".join(doc["processes"][0]["notes"]) if doc else ""
    check("F3: a trace cut after the run, at a chunk boundary: incomplete (123), and said",
          proc.returncode == 123 and "when the run ended: it was cut since" in notes, "exit %d %s" % (proc.returncode, notes))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--make-trace", help="bench_make_trace, for the many-process case")
    ap.add_argument("--tool-only", action="store_true", help="a CUAUDIT_TOOL_ONLY build: no `cuaudit run` cases")
    opts = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cuaudit-received-")
    try:
        r = Runs(os.path.abspath(opts.cuaudit), os.path.abspath(opts.golden), tmp)
        html_sources(r)
        fingerprints(r)
        duplicates(r)
        cut_traces(r)
        exit_codes(r)
        output_limits(r)
        version_and_header(r, os.path.dirname(os.path.abspath(opts.golden)))
        hostile_text(r)
        side_files(r)
        if not opts.tool_only:
            planted_links(r)  # runs a program under cuaudit
            unsaved_run_json(r)
            left_behind(r)
            cut_after_the_run(r)
        if opts.make_trace:
            many_processes(r, os.path.abspath(opts.make_trace))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (len(passes), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
