"""cuaudit's view of the blocks Python frameworks hand out of their own memory pools.

PyTorch and CuPy keep the memory they get from cudaMalloc in pools and hand tensors and arrays
out of it: cuaudit, which sees cudaMalloc, sees the pools but not what the program keeps in them.
These hooks ask each framework through its own public facilities, started when the program
imports it, without changing the program:

- PyTorch: its memory history (torch.cuda.memory._record_memory_history), turned on when PyTorch
  initializes CUDA, Python stacks only, at most CUAUDIT_TORCH_HISTORY_ENTRIES events per device
  (PyTorch keeps the most recent); at exit its snapshot (every block and segment allocated then,
  with its stack, and the history's block, segment and out-of-memory events) is written to
  CUAUDIT_TRACE_DIR/torch-blocks-<pid>.json, which the tool merges by time into the process's trace.
- CuPy: a memory hook (cupy.cuda.MemoryHook) on the thread that imports CuPy and on every thread
  started after (CuPy's hooks are per thread; threading.setprofile enters it as each one starts), which hands every
  block its default pool gives out or takes back, and every segment it takes from CUDA, to the
  injection library (cuaudit_pool_register, cuaudit_pool_block and cuaudit_pool_segment, through
  ctypes.PyDLL: the GIL stays held, so the injection reads the Python stack as it does for
  cudaMalloc). The pool's kind is the injection's number for the memory source "cupy_pool"
  (common/memory_sources.inc), asked with cuaudit_memory_source.

A hook that fails warns on stderr once and leaves the program alone. What each hook did (attached,
off, failed and why; CuPy's threads) is written to CUAUDIT_TRACE_DIR/python-hooks-<pid>.json as it
changes, for the report's notes.
"""
import atexit
import importlib.abc
import importlib.util
import json
import os
import sys

import cuaudit_layout  # the run directory's names (generated from common/run_dir_layout.inc)

_CUPY_SOURCE = b"cupy_pool"  # the memory source's key in common/memory_sources.inc
_TORCH_DEFAULT_ENTRIES = 100000
# The history's actions cuaudit keeps, as numbers in the blocks file (tool/trace/torch_history.cpp reads
# them): blocks handed out and given back, segments taken from CUDA and given back (mapped and
# unmapped with expandable segments), and the out-of-memory errors PyTorch raised.
_TORCH_ACTIONS = {"free_completed": 0, "alloc": 1, "segment_alloc": 2, "segment_free": 3, "segment_map": 4,
                  "segment_unmap": 5, "oom": 6}


def _warn(what, error):
    sys.stderr.write("cuaudit: warning: %s: %r\n" % (what, error))


_hook_state = {}  # framework -> {"state": "attached" | "off" | "failed", "why": ..., "threads": ...}


def _note_hook(framework, state=None, why=None, **more):
    """Says what a framework's hook did, in the run directory (python-hooks-<pid>.json)."""
    entry = _hook_state.setdefault(framework, {})
    if state:
        entry["state"] = state
    if why:
        entry["why"] = why
    entry.update(more)
    directory = os.environ.get("CUAUDIT_TRACE_DIR")
    if not directory:
        return
    prefix, suffix = cuaudit_layout.PythonHooks
    path = os.path.join(directory, "%s%d%s" % (prefix, os.getpid(), suffix))
    try:
        with open(path + ".tmp", "w") as f:
            json.dump({"format": "cuaudit-python-hooks", "version": 1, "pid": os.getpid(), "hooks": _hook_state}, f)
        os.replace(path + ".tmp", path)
    except OSError:
        pass  # the report then says nothing of the hooks; the program is not disturbed


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs an action right after a module's own code has run, the first time it is imported."""

    def __init__(self, actions):
        self.actions = dict(actions)
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name not in self.actions or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        action = self.actions.pop(name)
        original = spec.loader.exec_module

        def exec_module(module):
            original(module)
            try:
                action(module)
            except Exception as error:
                _warn("cuaudit's %s hook failed" % name, error)

        spec.loader.exec_module = exec_module
        return spec


# --- PyTorch -----------------------------------------------------------------------------------

def _torch_history_entries():
    try:
        return max(1, int(os.environ.get("CUAUDIT_TORCH_HISTORY_ENTRIES", _TORCH_DEFAULT_ENTRIES)))
    except ValueError:
        return _TORCH_DEFAULT_ENTRIES


def _start_torch(torch):
    if not hasattr(torch, "cuda") or not hasattr(torch.cuda, "_lazy_call"):
        return
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "0") not in ("", "0"):
        # No cache: every tensor is a cudaMalloc of its own, which cuaudit sees.
        _note_hook("torch", "off", "PYTORCH_NO_CUDA_MEMORY_CACHING is set: every tensor is a cudaMalloc of its own")
        return
    entries = _torch_history_entries()

    def record_history():
        # Runs inside PyTorch's lazy CUDA initialization: an exception here would fail the
        # program's first CUDA call, so none may leave.
        try:
            memory = torch.cuda.memory
            try:
                memory._record_memory_history(enabled="all", context="alloc", stacks="python",
                                              max_entries=entries, skip_actions=["free_requested"])
            except TypeError:  # a PyTorch without skip_actions
                memory._record_memory_history(enabled="all", context="alloc", stacks="python", max_entries=entries)
            atexit.register(_write_torch_blocks, torch, entries)
            _note_hook("torch", "attached")
        except Exception as error:
            _warn("PyTorch's memory history could not be started; its blocks are not followed", error)
            _note_hook("torch", "failed", "its memory history could not be started: %r" % (error,))

    # When PyTorch initializes CUDA (at once if it already has): never initializes it itself.
    torch.cuda._lazy_call(record_history)


def _write_torch_blocks(torch, entries):
    directory = os.environ.get("CUAUDIT_TRACE_DIR")
    if not directory:
        return
    try:
        snapshot = torch.cuda.memory._snapshot()
    except Exception as error:
        _warn("PyTorch's memory snapshot failed", error)
        return
    frames, frame_ids = [], {}

    def stack_id(stack):
        key = tuple((f.get("filename", ""), f.get("line", 0), f.get("name", "")) for f in stack or ())
        if not key:
            return 0
        if key not in frame_ids:
            frames.append([list(f) for f in key])
            frame_ids[key] = len(frames)
        return frame_ids[key]

    live, segments = [], []
    for segment in snapshot.get("segments", ()):
        segments.append([segment.get("device", 0), segment.get("address", 0), segment.get("total_size", 0)])
        for block in segment.get("blocks", ()):
            if block.get("state") == "active_allocated":
                live.append([segment.get("device", 0), block.get("address", 0),
                             block.get("requested_size", block.get("size", 0)), stack_id(block.get("frames"))])
    events = []
    for device, trace in enumerate(snapshot.get("device_traces", ())):
        for e in trace:
            action = _TORCH_ACTIONS.get(e.get("action"))
            if action is not None:
                events.append([device, action, e.get("addr", 0), e.get("size", 0), e.get("stream", 0),
                               e.get("time_us", 0), stack_id(e.get("frames")) if action in (1, 6) else 0])
    out = {"format": "cuaudit-torch-blocks", "version": 2, "pid": os.getpid(), "torch": torch.__version__,
           "max_entries": entries, "clock": "realtime_us", "frames": frames, "live": live, "segments": segments,
           "events": events}
    prefix, suffix = cuaudit_layout.TorchBlocks
    path = os.path.join(directory, "%s%d%s" % (prefix, os.getpid(), suffix))
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(out, f, separators=(",", ":"))
        os.replace(path + ".tmp", path)
    except OSError as error:
        _warn("cannot write " + path, error)


# --- CuPy --------------------------------------------------------------------------------------

def _injection():
    """The injection library already loaded in this process (None before CUDA is initialized)."""
    import ctypes

    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        return None
    try:
        lib = ctypes.PyDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None
    lib.cuaudit_pool_register.restype = ctypes.c_uint32
    lib.cuaudit_pool_register.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_int32]
    lib.cuaudit_pool_block.restype = None
    lib.cuaudit_pool_block.argtypes = [ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_uint64,
                                       ctypes.c_int32]
    lib.cuaudit_pool_segment.restype = None
    lib.cuaudit_pool_segment.argtypes = lib.cuaudit_pool_block.argtypes
    lib.cuaudit_memory_source.restype = ctypes.c_int32
    lib.cuaudit_memory_source.argtypes = [ctypes.c_char_p]
    return lib


def _start_cupy(cupy):
    from cupy.cuda import memory_hook

    class CuauditHook(memory_hook.MemoryHook):
        name = "cuaudit"

        def __init__(self):
            super().__init__()
            self.lib = None
            self.pool = 0

        def _ready(self):
            # The first block comes after CUDA was initialized, so the injection is loaded by then.
            if self.lib is None:
                self.lib = _injection() or False
                if self.lib:
                    kind = self.lib.cuaudit_memory_source(_CUPY_SOURCE)
                    if kind < 0:
                        _warn("CuPy's blocks are not followed", "this cuaudit knows no memory source cupy_pool")
                        _note_hook("cupy", "failed", "this cuaudit's injection knows no memory source cupy_pool")
                        self.lib = False
                    else:
                        self.pool = self.lib.cuaudit_pool_register(kind, b"CuPy memory pool", -1)
                        _note_hook("cupy", "attached")
                else:
                    _note_hook("cupy", "failed", "cuaudit's injection library is not loaded in the process "
                               "(CUDA_INJECTION64_PATH unset, or CUDA initialized without it)")
            return bool(self.lib) and self.pool

        def alloc_postprocess(self, device_id, mem_size, mem_ptr):
            # Memory the pool took from CUDA: a segment it hands blocks out of (its cudaFree ends it).
            if self._ready():
                self.lib.cuaudit_pool_segment(self.pool, 1, mem_ptr, mem_size, device_id)

        def malloc_postprocess(self, device_id, size, mem_size, mem_ptr, pmem_id):
            if self._ready():
                self.lib.cuaudit_pool_block(self.pool, 1, mem_ptr, size, device_id)

        def free_postprocess(self, device_id, mem_size, mem_ptr, pmem_id):
            if self._ready():
                self.lib.cuaudit_pool_block(self.pool, 0, mem_ptr, 0, device_id)

    hook = CuauditHook()
    hook.__enter__()  # for the importing thread, for the rest of its life
    threads = [1]

    # CuPy's hooks belong to a thread: each thread started after this enters the same hook first
    # (threading.setprofile's function runs in a new thread before its run()), then hands the
    # profile function back to whatever the program had set.
    import threading

    previous = threading.getprofile() if hasattr(threading, "getprofile") else None

    def enter(frame, event, arg):
        sys.setprofile(previous)
        try:
            hook.__enter__()
            threads[0] += 1
            _note_hook("cupy", threads=threads[0])
        except Exception:
            pass  # a thread that entered it already
        if previous is not None:
            return previous(frame, event, arg)
        return None

    threading.setprofile(enter)
    _note_hook("cupy", threads=threads[0])


def install():
    actions = {}
    if "torch" in sys.modules:
        _start_torch(sys.modules["torch"])
    else:
        actions["torch"] = _start_torch
    if "cupy" in sys.modules:
        _start_cupy(sys.modules["cupy"])
    else:
        actions["cupy"] = _start_cupy
    if actions:
        sys.meta_path.insert(0, _AfterImport(actions))
