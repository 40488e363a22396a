"""cuaudit's view of the blocks Python frameworks hand out of their own memory pools.

PyTorch, CuPy and JAX's XLA keep the memory they get from CUDA in pools and hand tensors and arrays
out of it: cuaudit, which sees CUDA's allocations, sees the pools but not what the program keeps in them.
These hooks ask each framework through its own public facilities, started when the program
imports it, without changing the program (one module each: cuaudit_hooks_torch, cuaudit_hooks_cupy,
cuaudit_hooks_jax; this one has what they share and installs them):

- PyTorch: its memory history (torch.cuda.memory._record_memory_history), turned on when PyTorch
  initializes CUDA, Python stacks only, at most CUAUDIT_TORCH_HISTORY_ENTRIES events per device
  (PyTorch keeps the most recent); at exit its snapshot (every block and segment allocated then,
  with its stack, and the history's block, segment and out-of-memory events) is written to
  CUAUDIT_TRACE_DIR/torch-blocks-<pid>.json, which the tool merges by time into the process's trace.
- JAX: its live arrays, listed at intervals (XLA's allocator below them says nothing itself), with
  XLA's statistics and its out-of-memory errors; cuaudit_hooks_jax.py says how.
- CuPy: a memory hook (cupy.cuda.MemoryHook) on the thread that imports CuPy and on every thread
  started after (CuPy's hooks are per thread; threading.setprofile enters it as each one starts), which hands every
  block its default pool gives out or takes back, and every segment it takes from CUDA, to the
  injection library (cuaudit_pool_register, cuaudit_pool_block and cuaudit_pool_segment, through
  ctypes.PyDLL: the GIL stays held, so the injection reads the Python stack as it does for
  cudaMalloc). The pool's kind is the injection's number for the memory source "cupy_pool"
  (common/memory_sources.inc), asked with cuaudit_memory_source.

While the program runs, PyTorch's and JAX's files are written again (FileWrites below): when cuaudit
asks (`cuaudit snapshot`, --snapshot-interval: it writes the run directory's framework-request file)
and every CUAUDIT_FRAMEWORK_WRITE_MS (default 60 s), so that a snapshot shows tensors and arrays by
Python line and a job killed with SIGKILL keeps what was written last.

A hook that fails warns on stderr once and leaves the program alone. What each hook did (attached,
off, failed and why; CuPy's threads) is written to CUAUDIT_TRACE_DIR/python-hooks-<pid>.json as it
changes, for the report's notes.
"""
import importlib
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
import time

import cuaudit_contract as contract  # generated from common/python_contract.inc and the lists beside it

_DEFAULT_ENTRIES = int(contract.ENV_DEFAULTS["CUAUDIT_TORCH_HISTORY_ENTRIES"])
_DEFAULT_WRITE_MS = int(contract.ENV_DEFAULTS["CUAUDIT_FRAMEWORK_WRITE_MS"])
_REQUEST_POLL_S = 0.1  # how often the run directory's framework-request file is looked at
# framework module -> the hook module that starts following it when the program imports it
_HOOKS = {module: framework.hook for module, framework in contract.FRAMEWORKS.items()}


def history_entries():
    """How many events a framework's history keeps (CUAUDIT_TORCH_HISTORY_ENTRIES), the most recent."""
    try:
        return max(1, int(os.environ.get("CUAUDIT_TORCH_HISTORY_ENTRIES", _DEFAULT_ENTRIES)))
    except ValueError:
        return _DEFAULT_ENTRIES


class StackTable:
    """The Python stacks a framework's file refers to by number: `frames[n - 1]` is stack n, each a
    list of [file, line, function], innermost first; 0 is no stack."""

    def __init__(self):
        self.frames, self._ids = [], {}

    def intern(self, key):
        """The number of the stack `key` (a tuple of (file, line, function)), new ones appended."""
        if not key:
            return 0
        if key not in self._ids:
            self.frames.append([list(f) for f in key])
            self._ids[key] = len(self.frames)
        return self._ids[key]


def warn(what, error):
    sys.stderr.write("cuaudit: warning: %s: %r\n" % (what, error))


_hook_state = {}  # framework -> {"state": "attached" | "off" | "failed", "why": ..., "threads": ...}
_answer = {}  # what the tool reads to know its last request was answered: {"writes": bool, "answered": request}


def note_hook(framework=None, state=None, why=None, **more):
    """Says what a framework's hook did, in the run directory (python-hooks-<pid>.json)."""
    if framework:
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
    entry, name, version = contract.HOOKS_STATE
    doc = {"format": name, "version": version, "pid": os.getpid(), "hooks": _hook_state}
    doc.update(_answer)
    write_run_file(directory, entry, doc, quiet=True)


def _write_interval_s():
    try:
        return max(0, int(os.environ.get("CUAUDIT_FRAMEWORK_WRITE_MS", _DEFAULT_WRITE_MS))) / 1000.0
    except ValueError:
        return _DEFAULT_WRITE_MS / 1000.0


class FileWrites:
    """Who writes a framework's file, and when. Each hook adds its writer (a function of `when`: the
    file's "written_at"); one thread of this module calls them all while the program runs: at each
    request of the tool (it writes a new request number into the run directory's framework-request
    file; the answer is that number in python-hooks-<pid>.json, after the files are written) and
    every CUAUDIT_FRAMEWORK_WRITE_MS. Writes are one at a time, and none comes after the last one at
    exit (a late periodic write would replace the exit's file with an older picture)."""

    def __init__(self):
        self.writers = []
        self.lock = threading.Lock()
        self.ended = False
        self.thread = None

    def add(self, writer):
        directory = os.environ.get("CUAUDIT_TRACE_DIR")
        with self.lock:
            self.writers.append(writer)
            if self.thread is None and directory:
                _answer["writes"] = True
                self.thread = threading.Thread(target=self._watch, args=(directory,), name="cuaudit-framework-files",
                                               daemon=True)
                self.thread.start()
        note_hook()

    def now(self, writer, when):
        """One writer, now (at an out-of-memory error), unless the last write at exit was done."""
        with self.lock:
            if not self.ended:
                writer(when)

    def last(self, writer):
        """A writer's write at exit; no periodic write comes after it."""
        with self.lock:
            writer("exit")
            self.writers = [w for w in self.writers if w is not writer]
            self.ended = not self.writers

    def _all(self, when):
        with self.lock:
            for writer in self.writers:
                try:
                    writer(when)
                except Exception as error:  # the next write may succeed; the program goes on
                    warn("cuaudit's framework file could not be written", error)

    def _watch(self, directory):
        request_path = os.path.join(directory, contract.FrameworkRequest.prefix)
        interval = _write_interval_s()
        answered = _read_request(request_path)  # one made before this process started was not for it
        last_write = time.monotonic()
        while not self.ended:
            time.sleep(_REQUEST_POLL_S)
            request = _read_request(request_path)
            due = interval and time.monotonic() - last_write >= interval
            if request == answered and not due:
                continue
            self._all("running")
            last_write = time.monotonic()
            if request != answered:
                answered = request
                _answer["answered"] = request
                note_hook()


def _read_request(path):
    try:
        with open(path) as f:
            return f.read(64).strip()
    except OSError:
        return ""


file_writes = FileWrites()


def write_run_file(directory, entry, doc, quiet=False):
    """Writes this process's file of a run-directory entry (common/run_dir_layout.inc) whole: a
    reader never sees half of it."""
    prefix, suffix = entry
    path = os.path.join(directory, "%s%d%s" % (prefix, os.getpid(), suffix))
    try:
        # A new file of our own (O_EXCL, O_NOFOLLOW), renamed over the old: a file or link planted
        # where the file goes is replaced, never written through.
        temporary = "%s.%s.tmp" % (path, os.urandom(6).hex())
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f, separators=(",", ":"))
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        if not quiet:
            warn("cannot write " + path, error)


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
                warn("cuaudit's %s hook failed" % name, error)

        spec.loader.exec_module = exec_module
        return spec


def install():
    actions = {}
    for framework, hook in _HOOKS.items():
        start = importlib.import_module(hook).start
        if framework in sys.modules:
            start(sys.modules[framework])
        else:
            actions[framework] = start
    if actions:
        sys.meta_path.insert(0, _AfterImport(actions))
