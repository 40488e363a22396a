#!/usr/bin/env python3
"""cuaudit's Python hooks (python/cuaudit_site) against stand-ins for PyTorch and CuPy, no GPU
needed: the hooks start when the program imports each framework, PyTorch's blocks file is written
at exit in the format the tool reads, a failing PyTorch history never fails the program, CuPy gets
a memory hook on the importing thread and on the threads started after, what each hook did is
written for the report (python-hooks-<pid>.json), and the sitecustomize the hooks shadow still
runs."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

FAKE_TORCH = {
    "torch/__init__.py": "from . import cuda\n__version__ = 'fake'\n",
    "torch/cuda/__init__.py": textwrap.dedent("""\
        from . import memory
        _queued = []
        _initialized = False
        def _lazy_call(fn):
            if _initialized: fn()
            else: _queued.append(fn)
        def _lazy_init():
            global _initialized
            _initialized = True
            for fn in _queued: fn()
        """),
    "torch/cuda/memory.py": textwrap.dedent("""\
        import os
        recording = {}
        def _record_memory_history(**kw):
            if os.environ.get("FAKE_TORCH_FAILS"): raise RuntimeError("no history here")
            recording.update(kw)
        def _snapshot():
            assert recording.get("stacks") == "python" and recording.get("context") == "alloc"
            frames = [{"filename": "/home/me/train.py", "line": 19, "name": "<module>"}]
            return {"segments": [{"device": 0, "address": 4096, "total_size": 2097152, "blocks": [
                        {"address": 4096, "size": 512, "requested_size": 500, "state": "active_allocated", "frames": frames},
                        {"address": 4608, "size": 512, "requested_size": 512, "state": "inactive", "frames": []}]}],
                    "device_traces": [[
                        {"action": "segment_alloc", "addr": 4096, "size": 2097152, "stream": 0, "time_us": 900, "frames": frames},
                        {"action": "alloc", "addr": 4096, "size": 500, "stream": 0, "time_us": 1000, "frames": frames},
                        {"action": "free_requested", "addr": 4096, "size": 500, "stream": 0, "time_us": 1500, "frames": []},
                        {"action": "oom", "addr": 1024, "size": 1 << 40, "stream": 0, "time_us": 1600, "frames": frames},
                        {"action": "alloc", "addr": 8192, "size": 64, "stream": 0, "time_us": 2000, "frames": frames},
                        {"action": "free_completed", "addr": 8192, "size": 64, "stream": 0, "time_us": 3000, "frames": []}]]}
        """),
}
FAKE_CUPY = {
    "cupy/__init__.py": "from . import cuda\n",
    "cupy/cuda/__init__.py": "from . import memory_hook\n",
    "cupy/cuda/memory_hook.py": textwrap.dedent("""\
        import threading
        _local = threading.local()
        def get_memory_hooks():
            if not hasattr(_local, "hooks"): _local.hooks = {}
            return _local.hooks
        class MemoryHook:
            name = "MemoryHook"
            def __enter__(self):
                get_memory_hooks()[self.name] = self
                return self
            def alloc_postprocess(self, **kw): pass
            def malloc_postprocess(self, **kw): pass
            def free_postprocess(self, **kw): pass
        """),
}
PROGRAM = textwrap.dedent("""\
    import ctypes, os, threading
    if os.environ.get("CUDA_INJECTION64_PATH"):  # as the driver would have loaded it
        ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=os.RTLD_GLOBAL)
    import torch, cupy
    torch.cuda._lazy_init()
    hooks = cupy.cuda.memory_hook.get_memory_hooks()
    assert "cuaudit" in hooks, hooks
    hooks["cuaudit"].alloc_postprocess(device_id=0, mem_size=1 << 20, mem_ptr=4096)
    hooks["cuaudit"].malloc_postprocess(device_id=0, size=10, mem_size=512, mem_ptr=4096, pmem_id=1)
    hooks["cuaudit"].free_postprocess(device_id=0, mem_size=512, mem_ptr=4096, pmem_id=1)
    print("CuPy pool number:", hooks["cuaudit"].pool)
    other = []
    t = threading.Thread(target=lambda: other.append(dict(cupy.cuda.memory_hook.get_memory_hooks())))
    t.start(); t.join()
    print("program done; other thread's hooks:", sorted(other[0]))
    """)


def write_tree(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


def run(hooks, tmp, extra_env=None, injection=None):
    trace_dir = tempfile.mkdtemp(dir=tmp)
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    if injection:
        env["CUDA_INJECTION64_PATH"] = injection
    env.update({"PYTHONPATH": os.pathsep.join([hooks, os.path.join(tmp, "fakes"), os.path.join(tmp, "other")]),
                "CUAUDIT_TRACE_DIR": trace_dir})
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, os.path.join(tmp, "program.py")], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    return proc, trace_dir


def blocks_files(trace_dir):
    return [n for n in os.listdir(trace_dir) if n.startswith("torch-blocks-")]


def hooks_state(trace_dir):
    """What python-hooks-<pid>.json says each hook did ({} when there is none)."""
    files = [n for n in os.listdir(trace_dir) if n.startswith("python-hooks-")]
    if len(files) != 1:
        return {}
    doc = json.load(open(os.path.join(trace_dir, files[0])))
    return doc.get("hooks", {}) if doc.get("format") == "cuaudit-python-hooks" else {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hooks", required=True, help="the cuaudit_site directory")
    ap.add_argument("--injection", help="libcuaudit-injection.so: CuPy's hook then reaches its C entry points")
    opts = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(os.path.join(tmp, "fakes"), {**FAKE_TORCH, **FAKE_CUPY})
        write_tree(os.path.join(tmp, "other"), {"sitecustomize.py": "print('shadowed sitecustomize ran')\n"})
        with open(os.path.join(tmp, "program.py"), "w") as f:
            f.write(PROGRAM)

        proc, trace_dir = run(opts.hooks, tmp)
        out = proc.stdout + proc.stderr
        if proc.returncode != 0:
            failures.append("the program failed under the hooks:\n" + out)
        if "shadowed sitecustomize ran" not in proc.stdout:
            failures.append("the sitecustomize the hooks shadow did not run")
        if "other thread's hooks: ['cuaudit']" not in proc.stdout:
            failures.append("CuPy's hook is expected on a thread started after the import too: " + proc.stdout)
        state = hooks_state(trace_dir)
        if state.get("torch", {}).get("state") != "attached" or state.get("cupy", {}).get("state") != "failed" or \
                "not loaded" not in state.get("cupy", {}).get("why", "") or state.get("cupy", {}).get("threads") != 2:
            failures.append("hooks state without the injection: %s" % state)
        files = [n for n in os.listdir(trace_dir) if n.startswith("torch-blocks-")]
        if sorted(n.split("-")[0] for n in os.listdir(trace_dir)) != ["python", "torch"]:
            failures.append("files in the run directory: %s" % os.listdir(trace_dir))
        if len(files) != 1:
            failures.append("expected one torch-blocks file, got %s" % files)
        else:
            doc = json.load(open(os.path.join(trace_dir, files[0])))
            if doc.get("format") != "cuaudit-torch-blocks" or doc.get("version") != 2:
                failures.append("blocks file header: %s" % {k: doc.get(k) for k in ("format", "version")})
            if doc.get("live") != [[0, 4096, 500, 1]]:
                failures.append("live blocks: %s" % doc.get("live"))
            # Segments and out-of-memory entries kept, free requests (PyTorch's own bookkeeping) not.
            if doc.get("events") != [[0, 2, 4096, 2097152, 0, 900, 0], [0, 1, 4096, 500, 0, 1000, 1],
                                     [0, 6, 1024, 1 << 40, 0, 1600, 1], [0, 1, 8192, 64, 0, 2000, 1],
                                     [0, 0, 8192, 64, 0, 3000, 0]]:
                failures.append("events: %s" % doc.get("events"))
            if doc.get("segments") != [[0, 4096, 2097152]]:
                failures.append("segments: %s" % doc.get("segments"))
            if doc.get("frames") != [[["/home/me/train.py", 19, "<module>"]]]:
                failures.append("frames: %s" % doc.get("frames"))

        if opts.injection:
            # The hook's ctypes calls against the real library: the pool's kind from the memory
            # source's key, a segment, a block handed out and taken back, with no warning.
            proc, trace_dir = run(opts.hooks, tmp, injection=opts.injection)
            if hooks_state(trace_dir).get("cupy", {}).get("state") != "attached":
                failures.append("CuPy's hook against the injection library did not say it attached: %s" %
                                hooks_state(trace_dir))
            if proc.returncode != 0 or "warning" in proc.stderr or "CuPy pool number: 0" in proc.stdout or \
                    "CuPy pool number:" not in proc.stdout:
                failures.append("CuPy's hook against the injection library (exit %d):\n%s" % (
                    proc.returncode, proc.stdout + proc.stderr))

        proc, trace_dir = run(opts.hooks, tmp, {"FAKE_TORCH_FAILS": "1"})
        if proc.returncode != 0 or "memory history could not be started" not in proc.stderr:
            failures.append("a failing history must warn and leave the program alone (exit %d):\n%s" % (
                proc.returncode, proc.stdout + proc.stderr))
        if blocks_files(trace_dir):
            failures.append("no blocks file is expected without a history: %s" % os.listdir(trace_dir))
        if hooks_state(trace_dir).get("torch", {}).get("state") != "failed" or \
                "no history here" not in hooks_state(trace_dir)["torch"].get("why", ""):
            failures.append("a failing history must say why in the hooks state: %s" % hooks_state(trace_dir))

        proc, trace_dir = run(opts.hooks, tmp, {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
        if proc.returncode != 0 or blocks_files(trace_dir) or hooks_state(trace_dir).get("torch", {}).get("state") != "off":
            failures.append("with PyTorch's cache off the hooks stay out and say so (exit %d, files %s, state %s)" % (
                proc.returncode, os.listdir(trace_dir), hooks_state(trace_dir)))
    if failures:
        print("FAIL framework hooks:\n  " + "\n  ".join(failures))
        return 1
    print("PASS framework hooks: started at import, blocks file written, failures harmless, shadowed "
          "sitecustomize kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
