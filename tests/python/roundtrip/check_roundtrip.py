#!/usr/bin/env python3
"""The Python hooks' writer meets the tool's reader, on the CPU: for PyTorch, CuPy and JAX, a program
runs the real hook modules (python/cuaudit_site) against a stand-in of the framework's API, with a
stand-in of the injection library (injection_stand_in.cpp: the real recorder, trace writer and pool
entry points, CUDA's allocations played by the framework's stand-in); `cuaudit report` then reads the
run directory, with the built-in frame rules off, and the findings must be those the program made:

- the pool's segments (the CUDA allocations it took) held_by_allocator, from the memory model alone
  (the stand-ins' stacks match no rule);
- growth at the program's line that keeps what it makes;
- PyTorch's out-of-memory error at the line that asked (from its history);
- nothing the program did not do: no leak, no error.

Usage: check_roundtrip.py --cuaudit BIN --hooks cuaudit_site --stand-in libinjection_stand_in.so"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import check_framework_hooks as hook_tests  # noqa: E402  (its stand-ins, and write_tree)

# Shared by the stand-ins: CUDA's allocations and kernel launches, played through the injection stand-in.
CUDA = textwrap.dedent("""\
    import ctypes, os
    _lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    _lib.stand_in_cuda_alloc.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32]
    _lib.stand_in_launches.argtypes = [ctypes.c_uint32]
    _next = [0x7f0000000000]
    def cuda_alloc(nbytes, driver=False):
        address = _next[0]
        _next[0] += nbytes
        _lib.stand_in_cuda_alloc(address, nbytes, 1 if driver else 0)
        return address
    def launch(kernels=64):  # what a framework's operation launches (a fill, a copy)
        _lib.stand_in_launches(kernels)
    """)

SEGMENT = 2 << 20

FAKE_TORCH = {
    "torch/__init__.py": textwrap.dedent("""\
        from . import cuda
        from ._allocator import empty
        __version__ = "stand-in"
        """),
    "torch/_cuda_stand_in.py": CUDA,
    "torch/cuda/__init__.py": textwrap.dedent("""\
        from . import memory
        class OutOfMemoryError(RuntimeError):
            pass
        _queued, _initialized = [], False
        def _lazy_call(fn):
            if _initialized: fn()
            else: _queued.append(fn)
        def _lazy_init():
            global _initialized
            _initialized = True
            for fn in _queued: fn()
        """),
    # PyTorch's caching allocator as its memory history shows it: segments of 2 MiB taken from CUDA,
    # blocks handed out of them, events with the wall clock's µs and the Python frames that asked.
    "torch/_allocator.py": textwrap.dedent("""\
        import sys, time
        from . import cuda
        from ._cuda_stand_in import cuda_alloc, launch
        SEGMENT = %d
        segments, events, live = [], [], {}
        def _frames():
            f, out = sys._getframe(2), []
            while f:
                out.append({"filename": f.f_code.co_filename, "line": f.f_lineno, "name": f.f_code.co_name})
                f = f.f_back
            return out
        def _record(action, addr, size, frames):
            if cuda.memory.recording:
                events.append({"action": action, "addr": addr, "size": size, "stream": 0,
                               "time_us": time.time_ns() // 1000, "frames": frames})
        class Tensor:
            def __init__(self, addr, nbytes):
                self.addr, self.nbytes = addr, nbytes
            def __del__(self):
                live.pop(self.addr, None)
                _record("free_completed", self.addr, self.nbytes, [])
        def empty(nbytes):
            frames = _frames()
            if nbytes > 64 * SEGMENT:
                _record("oom", 0, nbytes, frames)
                raise cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate %%d bytes" %% nbytes)
            if not segments or segments[-1][1] + nbytes > SEGMENT:
                base = cuda_alloc(SEGMENT)
                segments.append([base, 0])
                _record("segment_alloc", base, SEGMENT, frames)
            addr = segments[-1][0] + segments[-1][1]
            segments[-1][1] += (nbytes + 511) // 512 * 512
            live[addr] = (nbytes, frames)
            _record("alloc", addr, nbytes, frames)
            launch()
            return Tensor(addr, nbytes)
        def snapshot():
            out = []
            for base, _ in segments:
                blocks = [{"address": a, "size": n, "requested_size": n, "state": "active_allocated", "frames": f}
                          for a, (n, f) in sorted(live.items()) if base <= a < base + SEGMENT]
                out.append({"device": 0, "address": base, "total_size": SEGMENT, "blocks": blocks})
            return {"segments": out, "device_traces": [list(events)]}
        """ % SEGMENT),
    "torch/cuda/memory.py": textwrap.dedent("""\
        recording = {}
        def _record_memory_history(**kw):
            recording.update(kw)
        def _snapshot():
            from .._allocator import snapshot
            return snapshot()
        """),
}

# CuPy's default pool: segments from CUDA, its memory hooks (per thread) told of each.
FAKE_CUPY = {
    "cupy/__init__.py": "from . import cuda\nfrom ._pool import empty\n",
    "cupy/_cuda_stand_in.py": CUDA,
    "cupy/cuda/__init__.py": "from . import memory_hook\n",
    "cupy/cuda/memory_hook.py": hook_tests.FAKE_CUPY["cupy/cuda/memory_hook.py"],  # per-thread hooks
    "cupy/_pool.py": textwrap.dedent("""\
        from .cuda.memory_hook import get_memory_hooks
        from ._cuda_stand_in import cuda_alloc, launch
        SEGMENT = %d
        segments = []
        class ndarray:
            def __init__(self, ptr, size, mem_size):
                self.ptr, self.size, self.mem_size = ptr, size, mem_size
            def __del__(self):
                for hook in list(get_memory_hooks().values()):
                    hook.free_postprocess(device_id=0, mem_size=self.mem_size, mem_ptr=self.ptr, pmem_id=id(self))
        def empty(size):
            mem_size = (size + 511) // 512 * 512
            if not segments or segments[-1][1] + mem_size > SEGMENT:
                base = cuda_alloc(SEGMENT)
                segments.append([base, 0])
                for hook in list(get_memory_hooks().values()):
                    hook.alloc_postprocess(device_id=0, mem_size=SEGMENT, mem_ptr=base)
            ptr = segments[-1][0] + segments[-1][1]
            segments[-1][1] += mem_size
            a = ndarray(ptr, size, mem_size)
            for hook in list(get_memory_hooks().values()):
                hook.malloc_postprocess(device_id=0, size=size, mem_size=mem_size, mem_ptr=ptr, pmem_id=id(a))
            launch()
            return a
        """ % SEGMENT),
}

# JAX: XLA's BFC allocator takes one region from CUDA (cuMemAlloc) and hands arrays' buffers out of
# it; JAX lists the live arrays, each with its buffer and the traceback of the line that made it.
FAKE_JAX = {
    "jax/__init__.py": textwrap.dedent("""\
        import sys
        from . import errors
        from ._src import xla_bridge
        from ._cuda_stand_in import cuda_alloc, launch
        __version__ = "stand-in"
        arrays, _region = [], []
        class Device:
            id = 0
            local_hardware_id = 0
            platform = "gpu"
            def memory_stats(self):
                return {"bytes_limit": 64 << 20, "bytes_in_use": sum(a.nbytes for a in arrays),
                        "largest_free_block_bytes": 32 << 20}
        class _Frame:
            def __init__(self, f):
                self.file_name, self.line_num, self.function_name = f.f_code.co_filename, f.f_lineno, f.f_code.co_name
        class _Traceback:
            def __init__(self):
                f, self.frames = sys._getframe(2), []
                while f:
                    self.frames.append(_Frame(f))
                    f = f.f_back
        class Array:
            def __init__(self, address, nbytes):
                self.address, self.nbytes, self.traceback = address, nbytes, _Traceback()
            def devices(self):
                return {Device()}
            def unsafe_buffer_pointer(self):
                return self.address
            def is_deleted(self):
                return False
        def live_arrays(platform=None):
            return list(arrays)
        def local_devices():
            return [Device()]
        def zeros(nbytes):
            if not xla_bridge._backends:
                xla_bridge._backends["cuda"] = object()
                _region.append([cuda_alloc(64 << 20, driver=True), 0])
            address = _region[0][0] + _region[0][1]
            _region[0][1] += (nbytes + 255) // 256 * 256
            a = Array(address, nbytes)
            arrays.append(a)
            launch()
            return a
        """),
    "jax/_cuda_stand_in.py": CUDA,
    "jax/errors.py": "class JaxRuntimeError(RuntimeError):\n    pass\n",
    "jax/_src/__init__.py": "",
    "jax/_src/xla_bridge.py": "_backends = {}\n",
}

LOAD_STAND_IN = ('import ctypes, os, time\n'
                 'ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=os.RTLD_GLOBAL)  # as CUDA would load it\n')

# Each program: (the framework's stand-in, the program, the line that keeps what it makes, what
# else must be found: (kind, api, line) of the program's).
PROGRAMS = {
    "torch": (FAKE_TORCH, LOAD_STAND_IN + textwrap.dedent("""\
        import torch
        torch.cuda._lazy_init()
        kept = []
        for step in range(8):
            scratch = torch.empty(1 << 16)
            kept.append(torch.empty(1 << 18))  # KEEPS
            del scratch
            time.sleep(0.03)
        try:
            torch.empty(1 << 40)  # ASKS TOO MUCH
        except torch.cuda.OutOfMemoryError:
            pass
        """), [("out_of_memory", "CUDACachingAllocator::malloc", "ASKS TOO MUCH")]),
    "cupy": (FAKE_CUPY, LOAD_STAND_IN + textwrap.dedent("""\
        import cupy
        kept = []
        for step in range(8):
            scratch = cupy.empty(1 << 16)
            kept.append(cupy.empty(1 << 18))  # KEEPS
            del scratch
            time.sleep(0.03)
        """), []),
    "jax": (FAKE_JAX, LOAD_STAND_IN + textwrap.dedent("""\
        import jax
        kept = []
        for step in range(8):
            kept.append(jax.zeros(1 << 18))  # KEEPS
            time.sleep(0.08)
        """), []),
}


def line_of(program, marker):
    return next(i for i, text in enumerate(program.splitlines(), start=1) if marker in text)


def check(framework, opts, tmp):
    fake, program, expected = PROGRAMS[framework]
    # Under site-packages, as an installed framework is: its frames are the library's, not the program's.
    packages = os.path.join(tmp, framework, "site-packages")
    hook_tests.write_tree(packages, fake)
    path = os.path.join(tmp, framework, "program.py")
    with open(path, "w") as f:
        f.write(program)
    run = os.path.join(tmp, framework, "run")
    os.makedirs(run)
    env = dict(os.environ, CUDA_INJECTION64_PATH=opts.stand_in, CUAUDIT_TRACE_DIR=run,
               CUAUDIT_JAX_INTERVAL_MS="20", PYTHONPATH=os.pathsep.join([opts.hooks, packages]))
    proc = subprocess.run([sys.executable, path], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120)
    problems = []
    if proc.returncode != 0 or "warning" in proc.stderr:
        problems.append("the program under the hooks (exit %d): %s" % (proc.returncode, (proc.stdout + proc.stderr)[-600:]))
    out = os.path.join(tmp, framework, "report.json")
    subprocess.run([opts.cuaudit, "report", "-q", run, "--builtin-suppressions", "no", "--json", out],
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not os.path.exists(out):
        return problems + ["no report"]
    report = json.load(open(out))
    findings = report["findings"]

    def at(f):
        return next(((fr.get("file"), fr.get("line")) for fr in f["stack"] if fr.get("file") == path), None)

    got = sorted((f["kind"], f["api"], at(f)) for f in findings if f["kind"] != "held_by_allocator")
    want = sorted([("growth", growth_api(framework), (path, line_of(program, "# KEEPS")))] +
                  [(kind, api, (path, line_of(program, marker))) for kind, api, marker in expected])
    if got != want:
        problems.append("findings %s, expected %s" % (got, want))
    held = [f for f in findings if f["kind"] == "held_by_allocator"]
    if len(held) != 1 or held[0]["api"] != ("cuMemAlloc" if framework == "jax" else "cudaMalloc") or \
            not held[0]["headline"].startswith("Held by " + pool_name(framework)):
        problems.append("the pool's segments are expected held_by_allocator by the model: %s" %
                        [(f["api"], f["headline"][:80]) for f in held])
    damaged = [n for n in report["processes"][0]["notes"] if "could not" in n or "damaged" in n or "not judged" in n]
    if damaged:
        problems.append("the hook's file was not read whole: %s" % damaged)
    return problems


def growth_api(framework):
    return {"torch": "CUDACachingAllocator::malloc", "cupy": "MemoryPool.malloc", "jax": "BFCAllocator::AllocateRaw"}[framework]


def pool_name(framework):
    return {"torch": "PyTorch's CUDA caching allocator", "cupy": "CuPy's memory pool", "jax": "XLA's GPU allocator"}[framework]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--hooks", required=True, help="the cuaudit_site directory (with its generated cuaudit_contract.py)")
    ap.add_argument("--stand-in", required=True, help="libinjection_stand_in.so")
    opts = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for framework in PROGRAMS:
            problems = check(framework, opts, tmp)
            print("%s %s: %s" % ("FAIL" if problems else "PASS", framework,
                                 "; ".join(problems) if problems else "hook file and trace read back, findings as made"))
            failed += bool(problems)
            passed += not problems
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
