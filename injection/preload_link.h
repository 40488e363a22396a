// The injection's side of libcuaudit-preload.so: keeps its set of pinned and managed pointers in
// step with the program's CUDA calls, and records what the interposer reports (CUDA memory handed
// to libc; calls of exit, _exit, _Exit and quick_exit). Inert when the interposer is not loaded
// (the program was started without the cuaudit launcher).
#pragma once

#include "call_recorder.h"

namespace cuaudit::inject {

// Finds the interposer in the process and connects the reporters. Called once at initialization.
void connect_preload_library() noexcept;

// After a recorded call: pinned and managed allocations join the set, successful releases leave it.
void update_host_pointers(const ApiCall& call) noexcept;

// A destroyed context took its host allocations with it; their addresses may come back as heap
// memory, so the whole set is dropped (missing a later bug beats a false report).
void forget_host_pointers() noexcept;

}  // namespace cuaudit::inject
