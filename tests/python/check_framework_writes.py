#!/usr/bin/env python3
"""cuaudit's Python hooks write PyTorch's file while the program runs (issue 31, item 5), against the
stand-in PyTorch of check_framework_hooks.py, no GPU needed:
  - asked through the run directory's framework-request file, the hooks write the file and answer
    with the request's number in python-hooks-<pid>.json ("written_at": "running");
  - the write at exit comes last ("exit"), whatever was asked before;
  - with CUAUDIT_FRAMEWORK_WRITE_MS, a program killed with SIGKILL leaves the file it last wrote."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_framework_hooks import FAKE_TORCH, write_tree  # noqa: E402

PROGRAM = ("import os, time, torch\n"
           "torch.cuda._lazy_init()\n"
           "print('ready', flush=True)\n"
           "deadline = time.time() + 20\n"
           "while not os.path.exists(os.environ['STOP_FILE']) and time.time() < deadline:\n"
           "    time.sleep(0.02)\n")


def wait_for(what, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.02)
    return None


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def start(opts, tmp, write_ms):
    trace_dir = tempfile.mkdtemp(dir=tmp)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([opts.hooks, os.path.join(tmp, "fakes")]),
               CUAUDIT_TRACE_DIR=trace_dir, CUAUDIT_FRAMEWORK_WRITE_MS=str(write_ms),
               STOP_FILE=os.path.join(trace_dir, "stop"))
    env.pop("CUDA_INJECTION64_PATH", None)
    proc = subprocess.Popen([sys.executable, os.path.join(tmp, "program.py")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.readline()  # "ready": PyTorch's CUDA is up, the hook attached
    return proc, trace_dir


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hooks", required=True, help="the cuaudit_site directory")
    opts = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(os.path.join(tmp, "fakes"), FAKE_TORCH)
        with open(os.path.join(tmp, "program.py"), "w") as f:
            f.write(PROGRAM)

        # Asked while it runs (no periodic writes): the file, then the answer.
        proc, trace_dir = start(opts, tmp, 0)
        hooks = os.path.join(trace_dir, "python-hooks-%d.json" % proc.pid)
        blocks = os.path.join(trace_dir, "torch-blocks-%d.json" % proc.pid)
        if not wait_for(lambda: (read_json(hooks) or {}).get("writes")):
            failures.append("the hooks file never said the hooks write while running: %s" % read_json(hooks))
        if os.path.exists(blocks):
            failures.append("nothing asked and no periodic writes, yet a blocks file was written")
        for request in ("1001", "1002"):
            with open(os.path.join(trace_dir, "framework-request.tmp"), "w") as f:
                f.write(request + "\n")
            os.replace(os.path.join(trace_dir, "framework-request.tmp"), os.path.join(trace_dir, "framework-request"))
            if not wait_for(lambda: (read_json(hooks) or {}).get("answered") == request):
                failures.append("request %s not answered: %s" % (request, read_json(hooks)))
            doc = read_json(blocks) or {}
            if doc.get("written_at") != "running" or doc.get("live") != [[0, 4096, 500, 1]] or not doc.get("written_us"):
                failures.append("the file written on request %s: %s" % (request, {k: doc.get(k) for k in (
                    "written_at", "written_us", "live")}))
        open(os.path.join(trace_dir, "stop"), "w").close()
        out, err = proc.communicate(timeout=30)
        if proc.returncode != 0 or "warning" in err:
            failures.append("the program under the hooks (exit %d): %s" % (proc.returncode, out + err))
        if (read_json(blocks) or {}).get("written_at") != "exit":
            failures.append("the last write must be the exit's: %s" % (read_json(blocks) or {}).get("written_at"))

        # Periodic writes: a job killed with SIGKILL keeps the file last written.
        proc, trace_dir = start(opts, tmp, 100)
        blocks = os.path.join(trace_dir, "torch-blocks-%d.json" % proc.pid)
        if not wait_for(lambda: os.path.exists(blocks)):
            failures.append("no periodic write within 15 s at CUAUDIT_FRAMEWORK_WRITE_MS=100")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        doc = read_json(blocks) or {}
        if doc.get("written_at") != "running" or doc.get("live") != [[0, 4096, 500, 1]]:
            failures.append("after SIGKILL: %s" % {k: doc.get(k) for k in ("written_at", "live")})
    if failures:
        print("FAIL framework files while running:\n  " + "\n  ".join(failures))
        return 1
    print("PASS framework files while running: written when asked and answered, exit's write last, kept after SIGKILL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
