// The Python call stack of an allocation, when the process is a Python interpreter: the file,
// line and function of the innermost frames, so that memory PyTorch allocates is attributed to
// the user's line (`y = model(x)` in train.py:42), not to the interpreter.
//
// CPython's C API is looked up at run time (cuaudit links no Python). Frames are read only on a
// thread that holds the GIL, with the interpreter running and not finalizing, with the garbage
// collector paused (no Python code runs inside a CUDA callback) and the error indicator kept.
#pragma once

#include <cstdint>

namespace cuaudit::inject {

// Looks up the interpreter's API; a process without one keeps this off.
void resolve_python_api() noexcept;

// The calling thread's Python stack, written to the trace the first time this thread sees it.
// Returns its id, or 0 when there is none (not Python, GIL not held, no frame).
uint64_t capture_python_stack() noexcept;

// A forked child writes its stacks into a trace of its own.
void forget_written_python_stacks() noexcept;

}  // namespace cuaudit::inject
