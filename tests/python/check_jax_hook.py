#!/usr/bin/env python3
"""cuaudit's JAX hook (python/cuaudit_site/cuaudit_hooks.py) against a stand-in for JAX, no GPU
needed: the hook starts when the program imports JAX, never lists arrays before JAX started its
backends (that would start them, and XLA's preallocation, on cuaudit's account), lists the live
arrays at intervals (an array first seen is a block handed out, with the Python stack JAX kept for
it; one gone is a block taken back; a buffer two arrays share is one block; the array an out-of-memory error was for holds nothing), catches a RESOURCE_EXHAUSTED error the program itself catches
(sys.monitoring, Python 3.12 and later) with the allocator's statistics, and writes
jax-arrays-<pid>.json in the format the tool reads (tool/trace/framework_history.cpp)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

FAKE_JAX = {
    "jax/__init__.py": textwrap.dedent("""\
        from . import errors
        from ._src import xla_bridge
        __version__ = "fake"
        calls_before_backend = []
        arrays = []
        class Device:
            id = 3  # a device id that counts every process's devices
            local_hardware_id = 0
            platform = "gpu"
            def memory_stats(self):
                return {"bytes_limit": 8 << 30, "bytes_in_use": 7 << 30, "largest_free_block_bytes": 512 << 20}
        def live_arrays(platform=None):
            if not xla_bridge._backends:
                calls_before_backend.append(platform)
            return list(arrays)
        def local_devices():
            return [Device()]
        """),
    "jax/errors.py": "class JaxRuntimeError(RuntimeError):\n    pass\n",
    "jax/_src/__init__.py": "",
    "jax/_src/xla_bridge.py": "_backends = {}\n",
}
PROGRAM = textwrap.dedent("""\
    import sys, time
    import jax
    from jax._src import xla_bridge

    class Frame:
        def __init__(self, file_name, line_num, function_name):
            self.file_name, self.line_num, self.function_name = file_name, line_num, function_name

    class Traceback:
        def __init__(self, line):
            self.frames = [Frame("/site-packages/jax/_src/pxla.py", 420, "__call__"), Frame("/home/me/train.py", line, "step")]

    class Array:
        def __init__(self, address, nbytes, line):
            self.address, self.nbytes, self.traceback = address, nbytes, Traceback(line)
        def devices(self):
            return {jax.Device()}
        def unsafe_buffer_pointer(self):
            return self.address
        def is_deleted(self):
            return False

    time.sleep(0.2)  # JAX imported, its backends not started: nothing may be listed
    xla_bridge._backends["cuda"] = object()
    jax.arrays.append(Array(0x1000, 4096, 11))
    jax.arrays.append(Array(0x3000, 8192, 12))
    jax.arrays.append(Array(0x3000, 8192, 12))  # another array of the same buffer (an output that is its input)
    time.sleep(0.3)
    jax.arrays.pop()  # one of the two: the buffer stays
    time.sleep(0.3)
    jax.arrays.pop()  # the other: the buffer is gone
    time.sleep(0.3)

    def grow():
        raise jax.errors.JaxRuntimeError(
            "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2.00GiB with allocator GPU_0_bfc on device 0.")

    print("before backend:", jax.calls_before_backend)
    jax.arrays.append(Array(0x5000, 2 << 30, 13))  # the array the failing request is for: it holds nothing
    time.sleep(0.1)
    if "--uncaught" in sys.argv:
        grow()  # nobody catches it: the program ends with it
    try:
        grow()  # the program's line that ran out of memory
    except jax.errors.JaxRuntimeError:
        print("caught it")
    """)


def run(opts, tmp, program, uncaught):
    failures = []
    trace_dir = tempfile.mkdtemp(dir=tmp)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([opts.hooks, os.path.join(tmp, "fakes")]),
               CUAUDIT_TRACE_DIR=trace_dir, CUAUDIT_JAX_INTERVAL_MS="50")
    env.pop("CUDA_INJECTION64_PATH", None)
    proc = subprocess.run([sys.executable, program] + (["--uncaught"] if uncaught else []), env=env,
                          capture_output=True, text=True)
    expected = (1, "RESOURCE_EXHAUSTED") if uncaught else (0, "caught it")
    if proc.returncode != expected[0] or expected[1] not in proc.stdout + proc.stderr:
        failures.append("the program under the hook (exit %d):\n%s" % (proc.returncode, proc.stdout + proc.stderr))
    if "before backend: []" not in proc.stdout:
        failures.append("arrays were listed before JAX started its backends: " + proc.stdout)
    names = sorted(os.listdir(trace_dir))
    hooks = [n for n in names if n.startswith("python-hooks-")]
    state = json.load(open(os.path.join(trace_dir, hooks[0])))["hooks"].get("jax", {}) if hooks else {}
    if state.get("state") != "attached" or state.get("interval_ms") != 50:
        failures.append("hooks state: %s" % state)
    files = [n for n in names if n.startswith("jax-arrays-")]
    if len(files) != 1:
        return failures + ["expected one jax-arrays file, got %s" % names]
    doc = json.load(open(os.path.join(trace_dir, files[0])))
    if (doc.get("format"), doc.get("version"), doc.get("written_at")) != ("cuaudit-jax-arrays", 1, "exit"):
        failures.append("header: %s" % {k: doc.get(k) for k in ("format", "version", "written_at")})
    frames = doc.get("frames", [])
    events = doc.get("events", [])
    allocs = sorted((e[2], e[3], frames[e[6] - 1][-1][1]) for e in events if e[1] == 1)
    if allocs != [(0x1000, 4096, 11), (0x3000, 8192, 12)]:
        failures.append("blocks handed out (address, bytes, user line): %s" % allocs)
    if [e[2] for e in events if e[1] == 0] != [0x3000]:
        failures.append("blocks taken back: %s" % [e for e in events if e[1] == 0])
    if any(e[0] != 0 for e in events):
        failures.append("devices must be CUDA ordinals (local_hardware_id), not JAX ids: %s" % events)
    ooms = [e for e in events if e[1] == 6]
    if len(ooms) != 1:
        failures.append("expected one out-of-memory entry, got %s" % ooms)
    else:
        oom = ooms[0]
        lines = [(f[0].endswith("program.py"), f[2]) for f in frames[oom[6] - 1]]
        if oom[3] != 2 << 30 or oom[7:10] != [8 << 30, 7 << 30, 512 << 20]:
            failures.append("out-of-memory entry (request, limit, in use, largest free): %s" % oom)
        if lines[:2] != [(True, "grow"), (True, "<module>")]:
            failures.append("out-of-memory stack (innermost first): %s" % frames[oom[6] - 1])
    # XLA's statistics, kept where they changed (the stand-in's never change: one row).
    stats = doc.get("stats", [])
    if len(stats) != 1 or stats[0][0] != 0 or stats[0][2:] != [8 << 30, 7 << 30, 512 << 20]:
        failures.append("XLA's statistics (device, time, reserved, used, largest free): %s" % stats)
    if doc.get("live") != [[0, 0x1000, 4096, 1]]:
        failures.append("live at exit: %s" % doc.get("live"))
    return ["%s: %s" % ("uncaught" if uncaught else "caught", f) for f in failures]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hooks", required=True, help="the cuaudit_site directory")
    opts = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in FAKE_JAX.items():
            full = os.path.join(tmp, "fakes", path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        program = os.path.join(tmp, "program.py")
        with open(program, "w") as f:
            f.write(PROGRAM)
        # Python 3.12 and later (sys.monitoring): an error the program catches; before, one it does not.
        watched = sys.version_info >= (3, 12)
        for uncaught in ([False] if watched else []) + [True]:
            failures += run(opts, tmp, program, uncaught)
    if failures:
        print("FAIL JAX hook:\n  " + "\n  ".join(failures))
        return 1
    print("PASS JAX hook: arrays listed once JAX's backends were up, handed out and taken back with their "
          "Python lines, a RESOURCE_EXHAUSTED error with the allocator's figures, the file at exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
