"""cuaudit's JAX hook: the arrays XLA's allocator holds, listed as the program runs (cuaudit_hooks.py
and docs/PYTHON.md say more)."""
import atexit
import collections
import os
import re
import sys
import threading
import time

import cuaudit_contract as contract  # generated from common/python_contract.inc
from cuaudit_hooks import StackTable, file_writes, history_entries, note_hook, warn, write_run_file

# XLA's allocator (its BFC allocator takes 75% of the device at start-up by default) hands out the
# buffers of JAX's arrays: CUDA sees one allocation. JAX lists the arrays alive (jax.live_arrays()),
# each with its buffer's address and size and the Python traceback of the line that made it. The
# hook lists them at intervals (CUAUDIT_JAX_INTERVAL_MS, default 50) on a thread of its own, at an
# out-of-memory error and at exit: an array first seen is a block XLA handed out, one gone a block
# taken back. An array made and dropped between two lists is not seen (it is not kept either). At
# exit, at each out-of-memory error and while the program runs (cuaudit_hooks.FileWrites: when
# cuaudit asks, and every CUAUDIT_FRAMEWORK_WRITE_MS), CUAUDIT_TRACE_DIR/jax-arrays-<pid>.json is written: the
# events, the arrays still alive, their Python stacks, each out-of-memory error with the
# allocator's statistics then (jax.Device.memory_stats()), and those statistics at every listing
# where they changed.

_JAX_DEFAULT_INTERVAL_MS = int(contract.ENV_DEFAULTS["CUAUDIT_JAX_INTERVAL_MS"])
_JAX = contract.FRAMEWORKS["jax"]
_ALLOC, _FREE, _OOM = contract.ACTION_ALLOC, contract.ACTION_FREE_COMPLETED, contract.ACTION_OOM


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
        self.jax = jax
        self.entries = entries
        self.events = collections.deque(maxlen=entries)  # like PyTorch's history: the most recent
        # An array is known by its id and buffer address (a dead array's id is reused by Python);
        # several arrays can share one buffer (an output that is its input), counted once.
        self.live = {}  # (id(array), address) -> the (device, address) of its buffers
        self.buffers = {}  # (device, address) -> [arrays holding it, its event: [device, _ALLOC, address, bytes, 0, time, stack]]
        self.failed = set()  # arrays whose allocation failed (they hold no memory)
        # XLA's statistics at each listing where they changed: [device, time, reserved, used, largest free]
        self.stats = collections.deque(maxlen=entries)
        self.last_stats = {}
        self.devices = None  # this process's GPUs, once JAX's backends are up
        self.stacks = StackTable()
        self.lock = threading.Lock()
        self.seen_oom = None

    def _stack_id(self, traceback):
        try:
            return self.stacks.intern(tuple((f.file_name, f.line_num, f.function_name) for f in traceback.frames))
        except Exception:
            return 0

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
            self.events.append([buffer[0], _FREE, buffer[1], 0, 0, now, 0])

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
                        event = [device, _ALLOC, address, size, 0, now, stack]
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
            self.events.append([device, _OOM, 0, requested, 0, time.time_ns() // 1000, self.stacks.intern(tuple(stack)),
                                stats.get("bytes_limit", 0), stats.get("bytes_in_use", 0),
                                stats.get("largest_free_block_bytes", 0)])
        file_writes.now(self.write, "out_of_memory")

    def write(self, when):
        directory = os.environ.get("CUAUDIT_TRACE_DIR")
        if not directory:
            return
        with self.lock:
            live = [[e[contract.COLUMN_DEVICE], e[contract.COLUMN_ADDRESS], e[contract.COLUMN_BYTES], e[contract.COLUMN_STACK]]
                    for _, e in self.buffers.values()]
            out = {"format": _JAX.format, "version": _JAX.version, "pid": os.getpid(), "jax": self.jax.__version__,
                   "max_entries": self.entries, "clock": "realtime_us", "written_at": when,
                   "written_us": time.time_ns() // 1000, "frames": self.stacks.frames,
                   "live": live, "events": list(self.events), "stats": list(self.stats)}
        write_run_file(directory, _JAX.entry, out)


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


def start(jax):
    tracker = _JaxArrays(jax, history_entries())
    interval = _jax_interval_ms()
    errors = _watch_jax_errors(tracker)
    stop = threading.Event()

    def watch():
        while not stop.wait(interval / 1000.0):
            tracker.sample()

    def write(when):  # listed first: what is written is what is alive now
        tracker.sample()
        tracker.write(when)

    def at_exit():
        stop.set()
        file_writes.last(write)

    if interval:
        threading.Thread(target=watch, name="cuaudit-jax-listing", daemon=True).start()
    atexit.register(at_exit)
    file_writes.add(write)
    note_hook(_JAX.module, "attached", errors, interval_ms=interval)
