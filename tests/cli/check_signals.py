#!/usr/bin/env python3
"""What a stop does to `cuaudit run` (docs/EXIT_CODES.md, "Signals"): SIGTERM, SIGHUP, SIGINT and
SIGQUIT sent to cuaudit or to its process group, SIGUSR1, SIGUSR2 and SIGALRM passed on, a program
that ignores SIGTERM, timeout(1), nohup and --save. Every case must still give its report, leave no program running and no temporary run
directory behind. Runs without a GPU: the "program" copies a golden trace into its run directory
(what the injection would have written) and sleeps until it is stopped."""
import argparse
import json
import os
import resource
import shutil
import signal
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
        print("  " + detail.replace("\n", "\n  "))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has ended; only its parent has not waited for it yet.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for_file(path, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return True
        time.sleep(0.02)
    return False


def no_core_dumps():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Case:
    def __init__(self, cu, golden, tmp, name, trap=""):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.tmpdir = os.path.join(self.dir, "tmp")  # cuaudit's temporary run directory goes here
        os.makedirs(self.tmpdir)
        self.json = os.path.join(self.dir, "report.json")
        self.pidfile = os.path.join(self.dir, "program.pid")
        trace = [f for f in os.listdir(golden) if f.endswith(".cutrace")][0]
        self.script = ('%scp "%s" "$CUAUDIT_TRACE_DIR"/ && echo $$ > "%s" && exec sleep 60'
                       % (trap, os.path.join(golden, trace), self.pidfile))
        self.cu = cu

    def start(self, extra=(), new_session=False, prefix=(), hup_ignored=False):
        env = dict(os.environ, TMPDIR=self.tmpdir)

        def prepare():
            no_core_dumps()
            if hup_ignored:
                signal.signal(signal.SIGHUP, signal.SIG_IGN)  # what nohup does
        self.proc = subprocess.Popen(list(prefix) + [self.cu, "--require-cuda-init", "no", "--json", self.json] +
                                     list(extra) + ["sh", "-c", self.script],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=new_session, preexec_fn=prepare, env=env)
        started = wait_for_file(self.pidfile)
        self.program = int(open(self.pidfile).read()) if started else None
        time.sleep(0.2)  # sh has exec'd sleep; the signal finds the program, not the shell
        return started

    def finish(self, seconds=30):
        try:
            out, err = self.proc.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            err += "\n(cuaudit did not end within %d s; killed by the test)" % seconds
        self.stderr = err
        return self.proc.returncode

    def report(self):
        try:
            return json.load(open(self.json))
        except (OSError, ValueError):
            return None

    def expect(self, name, status, note=None):
        report = self.report()
        check(name + ": exit %d" % status, self.proc.returncode == status,
              "exit %s, stderr: %s" % (self.proc.returncode, self.stderr.strip()[-2000:]))
        check(name + ": the report is written", report is not None, self.stderr.strip()[-2000:])
        if report is not None:
            check(name + ": the report has the golden trace's leaks",
                  report["summary"].get("leaked_bytes", 0) > 0, json.dumps(report["summary"]))
            if note:
                notes = report.get("notes", [])
                check(name + ": the report says %r" % note, any(note in n for n in notes), "\n".join(notes))
        check(name + ": the program is not left running", self.program is not None and not alive(self.program))
        left = os.listdir(self.tmpdir)
        check(name + ": no temporary run directory is left", not left, " ".join(left))


def snapshot_stop(cu, make_trace, tmp):
    """F5: with --snapshot-interval, a stop reaches the program at once, not after the snapshot in
    flight (seconds for a long run: a CI runner's grace period would end first). An ordering, not a
    time limit: the program got the stop before the snapshot that was in flight when it was sent
    ended (that snapshot's file written)."""
    big = os.path.join(tmp, "big")
    os.makedirs(big)
    subprocess.run([make_trace, big, "2000000", "200000", "20000", "8"], stdout=subprocess.DEVNULL, check=True)
    trace = os.path.join(big, os.listdir(big)[0])
    program = ("import signal, sys, time\n"
               "signal.signal(signal.SIGTERM, lambda s, f: (print('%.6f' % time.time(), flush=True), sys.exit(0)))\n"
               "time.sleep(120)")
    script = 'cp "%s" "$CUAUDIT_TRACE_DIR"/ && exec "%s" -c "$0"' % (trace, sys.executable)
    report = os.path.join(tmp, "big.json")
    proc = subprocess.Popen([cu, "--require-cuda-init", "no", "--snapshot-interval", "1s", "--json", report,
                             "--log-file", os.devnull, "sh", "-c", script, program],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=no_core_dumps,
                            env=dict(os.environ, TMPDIR=tmp))
    time.sleep(2.5)  # a snapshot of two million events is in flight by now
    sent = time.time()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    got = float(out.strip().splitlines()[-1]) if out.strip() else None
    snapshots = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.startswith("big.snapshot-")]
    last_end = max((os.stat(f).st_mtime for f in snapshots), default=None)
    check("--snapshot-interval: a snapshot was in flight when the stop was sent (else this case tests nothing)",
          last_end is not None and last_end > sent, "snapshots %s, the last written %s s after the stop was sent" % (
              [os.path.basename(f) for f in snapshots], None if last_end is None else round(last_end - sent, 3)))
    check("--snapshot-interval: the stop reached the program before the snapshot in flight ended",
          got is not None and last_end is not None and got < last_end,
          "the program got it %s s after it was sent, the snapshot ended %s s after; %s" % (
              None if got is None else round(got - sent, 3), None if last_end is None else round(last_end - sent, 3),
              err[-500:]))
    check("--snapshot-interval: ... and the report is written", proc.returncode == 0 and os.path.exists(report),
          "exit %d %s" % (proc.returncode, err[-500:]))
    shutil.rmtree(big, ignore_errors=True)


def group_stop_once(cu, golden, tmp):
    """F4: a stop sent to cuaudit's process group (GitLab's cancel, `kill -- -PGID`, timeout(1)'s
    second send) reaches a program without a terminal once: a program that cleans up on the first
    stop and gives up on a second (as Python's try/finally, many servers and test runners do) ends
    cleanly, as it does without cuaudit."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
        name = signal.Signals(sig).name
        d = os.path.join(tmp, "once-" + name)
        os.makedirs(d)
        count = os.path.join(d, "count")
        program = ("import os, signal, sys, time\n"
                   "def got(s, f):\n"
                   "    open(%r, 'a').write('stop\\n')\n"
                   "signal.signal(%d, got)\n"
                   "open(%r, 'w').write(str(os.getpid()))\n"
                   "while not os.path.exists(%r): time.sleep(0.01)\n"
                   "time.sleep(0.5)  # cleaning up: a second stop would land here\n"
                   % (count, sig, os.path.join(d, "pid"), count))
        trace = os.path.join(golden, [f for f in os.listdir(golden) if f.endswith(".cutrace")][0])
        script = 'cp "%s" "$CUAUDIT_TRACE_DIR"/ && exec "%s" -c "$0"' % (trace, sys.executable)
        proc = subprocess.Popen([cu, "--require-cuda-init", "no", "--log-file", os.devnull, "sh", "-c", script,
                                 program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, preexec_fn=no_core_dumps, env=dict(os.environ, TMPDIR=d))
        if wait_for_file(os.path.join(d, "pid")):
            time.sleep(0.2)
            os.killpg(proc.pid, sig)
        out, err = proc.communicate(timeout=30)
        got = open(count).read().count("stop") if os.path.exists(count) else 0
        check("F4: %s to cuaudit's process group reaches the program once" % name, got == 1,
              "delivered %d time(s); exit %d %s" % (got, proc.returncode, err[-500:]))
        check("F4: ... and cuaudit ends with the program (exit 0)", proc.returncode == 0,
              "exit %d %s" % (proc.returncode, err[-500:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--make-trace", help="bench_make_trace: a long run's trace for the snapshot case")
    args = ap.parse_args()
    cu, golden = os.path.abspath(args.cuaudit), os.path.abspath(args.golden)
    tmp = tempfile.mkdtemp(prefix="cuaudit-signals-")
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
            name = signal.Signals(sig).name
            case = Case(cu, golden, tmp, "to-cuaudit-" + name)
            if case.start():
                case.proc.send_signal(sig)
            case.finish()
            case.expect("%s to cuaudit" % name, 128 + sig, "cuaudit received %s while the program ran" % name)

            case = Case(cu, golden, tmp, "to-group-" + name)
            if case.start(new_session=True):
                os.killpg(case.proc.pid, sig)
            case.finish()
            case.expect("%s to cuaudit's process group" % name, 128 + sig)

        group_stop_once(cu, golden, tmp)

        # What schedulers send before a job's time ends (Slurm's --signal=USR1@60, Grid Engine's -notify)
        # and timers: passed on to the program, never the end of cuaudit. The program (sleep) dies of
        # each by default, and cuaudit reports as it does for any program that a signal ends.
        for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM):
            name = signal.Signals(sig).name
            case = Case(cu, golden, tmp, "notice-" + name)
            if case.start():
                case.proc.send_signal(sig)
            case.finish()
            case.expect("%s to cuaudit is passed on to the program" % name, 128 + sig)

        case = Case(cu, golden, tmp, "ignores-term", trap="trap '' TERM; ")
        if case.start():
            case.proc.send_signal(signal.SIGTERM)
            time.sleep(1.5)
            check("a program that ignores SIGTERM keeps running after the first",
                  case.program is not None and alive(case.program))
            case.proc.send_signal(signal.SIGTERM)
        case.finish()
        case.expect("a program that ignores SIGTERM, a second SIGTERM", 128 + signal.SIGKILL,
                    "it killed the program (SIGKILL)")

        # The second stop kills the whole tree: a background child that ignores SIGTERM too is not left.
        grandchild = os.path.join(tmp, "grandchild.pid")
        case = Case(cu, golden, tmp, "tree-ignores-term",
                    trap="trap '' TERM; sleep 61 & echo $! > '%s'; " % grandchild)
        if case.start():
            case.proc.send_signal(signal.SIGTERM)
            time.sleep(1.5)
            case.proc.send_signal(signal.SIGTERM)
        case.finish()
        case.expect("a tree that ignores SIGTERM, a second SIGTERM", 128 + signal.SIGKILL,
                    "it killed the program (SIGKILL)")
        left = int(open(grandchild).read()) if os.path.exists(grandchild) else None
        check("... and the program's own child that ignores SIGTERM is killed too", left is not None and not alive(left),
              "grandchild %s still running" % left)
        if left is not None and alive(left):
            os.kill(left, signal.SIGKILL)

        if args.make_trace:
            snapshot_stop(cu, os.path.abspath(args.make_trace), tmp)

        case = Case(cu, golden, tmp, "timeout")
        timeout = shutil.which("timeout")
        if timeout:
            # timeout(1) signals cuaudit and then its own process group: the same stop twice.
            case.start(prefix=[timeout, "-s", "TERM", "5"])
            case.finish()
            case.expect("timeout -s TERM 5 cuaudit ...", 124, "cuaudit received SIGTERM")

        case = Case(cu, golden, tmp, "nohup")
        if case.start(hup_ignored=True):
            case.proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            check("under nohup, SIGHUP is ignored, by cuaudit and by the program",
                  case.proc.poll() is None and alive(case.program))
            case.proc.send_signal(signal.SIGTERM)
        case.finish()
        case.expect("under nohup, then SIGTERM", 128 + signal.SIGTERM)

        case = Case(cu, golden, tmp, "save")
        save = os.path.join(case.dir, "run")
        if case.start(extra=["--save", save]):
            case.proc.send_signal(signal.SIGTERM)
        case.finish()
        case.expect("SIGTERM with --save", 128 + signal.SIGTERM)
        try:
            run = json.load(open(os.path.join(save, "run.json")))
        except (OSError, ValueError) as e:
            run = {"error": str(e)}
        check("--save keeps run.json with the stop passed on",
              run.get("forwarded_signal") == signal.SIGTERM and run.get("signal") == signal.SIGTERM, json.dumps(run))
        again = subprocess.run([cu, "report", save], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check("cuaudit report of the saved run says the stop", "passed it on" in again.stderr, again.stderr[-2000:])

        # stderr a pipe whose reader is gone (`2>&1 | head -1` after its line): the files are still written.
        pipe_json = os.path.join(tmp, "pipe.json")
        read_end, write_end = os.pipe()
        os.close(read_end)
        copy = os.path.join(tmp, "pipe-run")
        shutil.copytree(golden, copy)
        done = subprocess.run([cu, "report", copy, "--json", pipe_json], stdout=subprocess.DEVNULL, stderr=write_end)
        os.close(write_end)
        check("a closed stderr does not lose --json", os.path.exists(pipe_json),
              "cuaudit's exit status: %d" % done.returncode)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (len(passes), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
