"""cuaudit's PyTorch hook: its caching allocator's memory history, started when PyTorch initializes
CUDA, written to CUAUDIT_TRACE_DIR/torch-blocks-<pid>.json at exit, at each out-of-memory error its
allocator raises, and while the program runs (cuaudit_hooks.py says more)."""
import atexit
import os
import time

import cuaudit_contract as contract  # generated from common/python_contract.inc
from cuaudit_hooks import StackTable, file_writes, history_entries, note_hook, warn, write_run_file

# The history's actions cuaudit keeps, as numbers in the blocks file (common/python_contract.inc):
# blocks handed out and given back, segments taken from CUDA and given back (mapped and unmapped with
# expandable segments), and the out-of-memory errors PyTorch raised.
_TORCH_ACTIONS = contract.HISTORY_ACTIONS
_WITH_STACK = (contract.ACTION_ALLOC, contract.ACTION_OOM)
_TORCH = contract.FRAMEWORKS["torch"]


def start(torch):
    if not hasattr(torch, "cuda") or not hasattr(torch.cuda, "_lazy_call"):
        return
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "0") not in ("", "0"):
        # No cache: every tensor is a cudaMalloc of its own, which cuaudit sees.
        note_hook(_TORCH.module, "off", "PYTORCH_NO_CUDA_MEMORY_CACHING is set: every tensor is a cudaMalloc of its own")
        return
    entries = history_entries()

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

            def write(when):
                _write_torch_blocks(torch, entries, when)

            atexit.register(file_writes.last, write)
            file_writes.add(write)
            _watch_out_of_memory(torch, write)
            note_hook(_TORCH.module, "attached")
        except Exception as error:
            warn("PyTorch's memory history could not be started; its blocks are not followed", error)
            note_hook(_TORCH.module, "failed", "its memory history could not be started: %r" % (error,))

    # When PyTorch initializes CUDA (at once if it already has): never initializes it itself.
    torch.cuda._lazy_call(record_history)


def _watch_out_of_memory(torch, write):
    """Writes the file at each out-of-memory error the caching allocator raises (its observers are
    called after it recorded the error in its history and let go of its lock)."""
    attach = getattr(getattr(torch, "_C", None), "_cuda_attach_out_of_memory_observer", None)
    if attach is None:
        return

    def observer(device, requested, device_allocated, device_free):
        try:
            file_writes.now(write, "out_of_memory")
        except Exception as error:  # the error the program sees stays PyTorch's own
            warn("PyTorch's blocks could not be written at its out-of-memory error", error)

    attach(observer)


def _write_torch_blocks(torch, entries, when="exit"):
    directory = os.environ.get("CUAUDIT_TRACE_DIR")
    if not directory:
        return
    try:
        snapshot = torch.cuda.memory._snapshot()
    except Exception as error:
        warn("PyTorch's memory snapshot failed", error)
        return
    stacks = StackTable()

    def stack_id(stack):
        return stacks.intern(tuple((f.get("filename", ""), f.get("line", 0), f.get("name", "")) for f in stack or ()))

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
                               e.get("time_us", 0), stack_id(e.get("frames")) if action in _WITH_STACK else 0])
    out = {"format": _TORCH.format, "version": _TORCH.version, "pid": os.getpid(), "torch": torch.__version__,
           "max_entries": entries, "clock": "realtime_us", "written_at": when, "written_us": time.time_ns() // 1000,
           "frames": stacks.frames, "live": live, "segments": segments, "events": events}
    write_run_file(directory, _TORCH.entry, out)
