"""cuaudit's CuPy hook: a memory hook on every thread that hands the blocks and segments of CuPy's
default pool to the injection library (cuaudit_hooks.py says more)."""
import os
import sys

import cuaudit_contract as contract  # generated from common/python_contract.inc
from cuaudit_hooks import note_hook, warn

_CUPY = contract.FRAMEWORKS["cupy"]
_CUPY_SOURCE = _CUPY.source.encode()  # its memory source's key (memory_sources.inc)


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
    return contract.bind_entry_points(lib)  # each entry point's signature, as cuaudit_pool_api.h declares it


def start(cupy):
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
                        warn("CuPy's blocks are not followed", "this cuaudit knows no memory source %s" % _CUPY_SOURCE.decode())
                        note_hook(_CUPY.module, "failed", "this cuaudit's injection knows no memory source %s" % _CUPY_SOURCE.decode())
                        self.lib = False
                    else:
                        self.pool = self.lib.cuaudit_pool_register(kind, b"CuPy memory pool", -1)
                        note_hook(_CUPY.module, "attached")
                else:
                    note_hook(_CUPY.module, "failed", "cuaudit's injection library is not loaded in the process "
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
        if threading.current_thread().name.startswith("cuaudit-"):  # the hooks' own threads allocate nothing
            return previous(frame, event, arg) if previous is not None else None
        try:
            hook.__enter__()
            threads[0] += 1
            note_hook(_CUPY.module, threads=threads[0])
        except Exception:
            pass  # a thread that entered it already
        if previous is not None:
            return previous(frame, event, arg)
        return None

    threading.setprofile(enter)
    note_hook(_CUPY.module, threads=threads[0])
