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
- JAX: its live arrays, listed at intervals (XLA's allocator below them says nothing itself); see
  the JAX section below.
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
import time

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
    # Quietly: the report then says nothing of the hooks; the program is not disturbed.
    _write_run_file(directory, cuaudit_layout.PythonHooks,
                    {"format": "cuaudit-python-hooks", "version": 1, "pid": os.getpid(), "hooks": _hook_state},
                    quiet=True)


def _write_run_file(directory, entry, doc, quiet=False):
    """Writes this process's file of a run-directory entry (common/run_dir_layout.inc) whole: a
    reader never sees half of it."""
    prefix, suffix = entry
    path = os.path.join(directory, "%s%d%s" % (prefix, os.getpid(), suffix))
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(doc, f, separators=(",", ":"))
        os.replace(path + ".tmp", path)
    except OSError as error:
        if not quiet:
            _warn("cannot write " + path, error)


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
    _write_run_file(directory, cuaudit_layout.TorchBlocks, out)


# --- JAX ---------------------------------------------------------------------------------------
#
# XLA's allocator (its BFC allocator takes 75% of the device at start-up by default) hands out the
# buffers of JAX's arrays: CUDA sees one allocation. JAX lists the arrays alive (jax.live_arrays()),
# each with its buffer's address and size and the Python traceback of the line that made it. The
# hook lists them at intervals (CUAUDIT_JAX_INTERVAL_MS, default 50) on a thread of its own, at an
# out-of-memory error and at exit: an array first seen is a block XLA handed out, one gone a block
# taken back. An array made and dropped between two lists is not seen (it is not kept either). At
# exit, and at each out-of-memory error, CUAUDIT_TRACE_DIR/jax-arrays-<pid>.json is written: the
# events, the arrays still alive, their Python stacks, and each out-of-memory error with the
# allocator's statistics then (jax.Device.memory_stats()).

_JAX_DEFAULT_INTERVAL_MS = 50


def _ordinal(device):
    """A JAX device's CUDA ordinal in this process (its id counts devices of every process)."""
    hardware = getattr(device, "local_hardware_id", None)
    return device.id if hardware is None else hardware


def _jax_backend_up():
    """Whether JAX has started its backends: listing arrays before would start them (and XLA's
    preallocation) on cuaudit's account, before the program chose its platform and memory settings."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    return bool(getattr(bridge, "_backends", None))


class _JaxArrays:
    def __init__(self, jax, entries):
        import collections
        import threading

        self.jax = jax
        self.entries = entries
        self.events = collections.deque(maxlen=entries)  # like PyTorch's history: the most recent
        # An array is known by its id and buffer address (a dead array's id is reused by Python);
        # several arrays can share one buffer (an output that is its input), counted once.
        self.live = {}  # (id(array), address) -> the (device, address) of its buffers
        self.buffers = {}  # (device, address) -> [arrays holding it, its event: [device, 1, address, bytes, 0, time, stack]]
        self.failed = set()  # arrays whose allocation failed (they hold no memory)
        # XLA's statistics at each listing where they changed: [device, time, reserved, used, largest free]
        self.stats = collections.deque(maxlen=entries)
        self.last_stats = {}
        self.devices = None  # this process's GPUs, once JAX's backends are up
        self.frames, self.frame_ids = [], {}
        self.lock = threading.Lock()
        self.seen_oom = None
        self.ooms = 0

    def _stack_id(self, traceback):
        try:
            key = tuple((f.file_name, f.line_num, f.function_name) for f in traceback.frames)
        except Exception:
            return 0
        if not key:
            return 0
        if key not in self.frame_ids:
            self.frames.append([list(f) for f in key])
            self.frame_ids[key] = len(self.frames)
        return self.frame_ids[key]

    def _buffers(self, array):
        """(device ordinal, address, bytes) of each of the array's buffers on this process's GPUs."""
        try:
            device = next(iter(array.devices()))
            return [(_ordinal(device), array.unsafe_buffer_pointer(), array.nbytes)]
        except Exception:  # sharded over several devices: one buffer per shard
            out = []
            for shard in array.addressable_shards:
                out.append((_ordinal(shard.device), shard.data.unsafe_buffer_pointer(), shard.data.nbytes))
            return out

    @staticmethod
    def _key(array):
        """How a listing knows an array again; None for one whose buffer is gone (donated, deleted)."""
        try:
            return id(array), array.unsafe_buffer_pointer()
        except Exception:  # deleted, or sharded over several devices
            try:
                return None if array.is_deleted() else (id(array), None)
            except Exception:
                return None

    def _release(self, buffer, now):
        held = self.buffers[buffer]
        held[0] -= 1
        if not held[0]:
            del self.buffers[buffer]
            self.events.append([buffer[0], 0, buffer[1], 0, 0, now, 0])

    def sample(self):
        """Lists the live arrays: buffers new since the last list were handed out, those gone taken back."""
        if not _jax_backend_up():
            return
        with self.lock:
            try:
                arrays = self.jax.live_arrays("gpu")
            except Exception:  # no GPU backend (jax_platforms=cpu): nothing of cuaudit's
                return
            now = time.time_ns() // 1000
            current = {}
            for array in arrays:
                key = self._key(array)
                if key is not None:
                    current[key] = array
            for key in [k for k in self.live if k not in current]:
                for buffer in self.live.pop(key):
                    self._release(buffer, now)
            self.failed &= set(current)
            for key, array in current.items():
                if key in self.live or key in self.failed:
                    continue
                try:
                    buffers = self._buffers(array)
                except Exception:
                    continue
                stack = self._stack_id(getattr(array, "traceback", None))
                for device, address, size in buffers:
                    held = self.buffers.get((device, address))
                    if held:
                        held[0] += 1
                    else:
                        event = [device, 1, address, size, 0, now, stack]
                        self.buffers[(device, address)] = [1, event]
                        self.events.append(event)
                self.live[key] = [(device, address) for device, address, _ in buffers]
            self._take_stats(now)

    def _take_stats(self, now):
        """XLA's own figures of each GPU (Device.memory_stats()), kept where they changed."""
        try:
            if self.devices is None:
                self.devices = [d for d in self.jax.local_devices() if d.platform == "gpu"]
            for device in self.devices:
                stats = device.memory_stats() or {}
                row = (stats.get("pool_bytes") or stats.get("bytes_limit", 0), stats.get("bytes_in_use", 0),
                       stats.get("largest_free_block_bytes", 0))
                if row[0] and self.last_stats.get(_ordinal(device)) != row:
                    self.last_stats[_ordinal(device)] = row
                    self.stats.append([_ordinal(device), now] + list(row))
        except Exception:  # a JAX without statistics: the arrays are still followed
            self.devices = []

    def out_of_memory(self, error, frame):
        """XLA's RESOURCE_EXHAUSTED: the request, the Python line that made it, the allocator's figures."""
        if error is self.seen_oom:  # JAX raises it again with a filtered traceback
            return
        self.seen_oom = error
        text = str(error)
        import re

        size = re.search(r"allocate ([0-9.]+)([KMGT]?i?B)", text)
        units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
        requested = int(float(size.group(1)) * units.get(size.group(2), 1)) if size else 0
        device = re.search(r"on device (\d+)", text)
        device = int(device.group(1)) if device else 0
        stack = []
        while frame is not None:
            stack.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
            frame = frame.f_back
        stats = {}
        try:
            stats = next(d for d in self.jax.local_devices() if d.platform == "gpu" and
                         _ordinal(d) == device).memory_stats() or {}
        except Exception:
            pass
        self.sample()
        with self.lock:
            # The array the failed request was for exists already (JAX dispatches asynchronously and
            # raises where the program waits for it) but holds no memory: the newest of that size.
            for array in reversed(list(self.live)):
                buffers = self.live[array]
                if any(self.buffers[b][0] == 1 and abs(self.buffers[b][1][3] - requested) <= requested // 100
                       for b in buffers):
                    for b in self.live.pop(array):
                        held = self.buffers[b]
                        held[0] -= 1
                        if not held[0]:  # it was never handed out: its event goes
                            del self.buffers[b]
                            try:
                                self.events.remove(held[1])
                            except ValueError:  # no longer among the most recent events
                                pass
                    self.failed.add(array)
                    break
            key = tuple(stack)
            if key not in self.frame_ids:
                self.frames.append([list(f) for f in key])
                self.frame_ids[key] = len(self.frames)
            self.events.append([device, 6, 0, requested, 0, time.time_ns() // 1000, self.frame_ids[key],
                                stats.get("bytes_limit", 0), stats.get("bytes_in_use", 0),
                                stats.get("largest_free_block_bytes", 0)])
            self.ooms += 1
        self.write("out_of_memory")

    def write(self, when):
        directory = os.environ.get("CUAUDIT_TRACE_DIR")
        if not directory:
            return
        with self.lock:
            live = [[e[0], e[2], e[3], e[6]] for _, e in self.buffers.values()]
            out = {"format": "cuaudit-jax-arrays", "version": 1, "pid": os.getpid(), "jax": self.jax.__version__,
                   "max_entries": self.entries, "clock": "realtime_us", "written_at": when, "frames": self.frames,
                   "live": live, "events": list(self.events), "stats": list(self.stats)}
        _write_run_file(directory, cuaudit_layout.JaxArrays, out)


def _jax_interval_ms():
    try:
        return max(0, int(os.environ.get("CUAUDIT_JAX_INTERVAL_MS", _JAX_DEFAULT_INTERVAL_MS)))
    except ValueError:
        return _JAX_DEFAULT_INTERVAL_MS


def _watch_jax_errors(tracker):
    """Calls tracker.out_of_memory for each RESOURCE_EXHAUSTED error JAX raises, caught or not."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:  # before Python 3.12: only the errors nobody caught
        previous = sys.excepthook

        def excepthook(kind, error, traceback):
            if "RESOURCE_EXHAUSTED" in str(error)[:40]:
                while traceback.tb_next:
                    traceback = traceback.tb_next
                tracker.out_of_memory(error, traceback.tb_frame)
            previous(kind, error, traceback)

        sys.excepthook = excepthook
        return "uncaught out-of-memory errors only (Python before 3.12 has no sys.monitoring)"
    runtime_error = getattr(getattr(tracker.jax, "errors", None), "JaxRuntimeError", RuntimeError)
    for tool in range(5, 0, -1):  # a tool number nobody else took (debuggers and profilers take 0 to 2)
        if monitoring.get_tool(tool) is None:
            break
    else:
        return "out-of-memory errors not watched: every sys.monitoring tool number is taken"
    monitoring.use_tool_id(tool, "cuaudit")

    def raised(code, offset, error):
        if isinstance(error, runtime_error) and str(error).startswith("RESOURCE_EXHAUSTED"):
            tracker.out_of_memory(error, sys._getframe(1))

    monitoring.register_callback(tool, monitoring.events.RAISE, raised)
    monitoring.set_events(tool, monitoring.get_events(tool) | monitoring.events.RAISE)
    return None


def _start_jax(jax):
    import threading

    tracker = _JaxArrays(jax, _torch_history_entries())
    interval = _jax_interval_ms()
    errors = _watch_jax_errors(tracker)
    stop = threading.Event()

    def watch():
        while not stop.wait(interval / 1000.0):
            tracker.sample()

    def at_exit():
        stop.set()
        tracker.sample()
        tracker.write("exit")

    if interval:
        threading.Thread(target=watch, name="cuaudit-jax-arrays", daemon=True).start()
    atexit.register(at_exit)
    _note_hook("jax", "attached", errors, interval_ms=interval)


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
    if "jax" in sys.modules:
        _start_jax(sys.modules["jax"])
    else:
        actions["jax"] = _start_jax
    if "cupy" in sys.modules:
        _start_cupy(sys.modules["cupy"])
    else:
        actions["cupy"] = _start_cupy
    if actions:
        sys.meta_path.insert(0, _AfterImport(actions))
