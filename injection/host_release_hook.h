// The injection's side of libcuaudit-preload.so: keeps its set of pinned and managed pointers in
// step with the program's CUDA calls, and records what the interposer reports. Inert when the
// interposer is not loaded (the program was started without the cuaudit launcher).
#pragma once

#include "call_recorder.h"

namespace cuaudit::inject {

// Finds the interposer in the process and connects the reporter. Called once at initialization.
void connect_host_release_interposer() noexcept;

// After a recorded call: pinned and managed allocations join the set, successful releases leave it.
void update_host_pointers(const ApiCall& call) noexcept;

// A destroyed context took its host allocations with it; their addresses may come back as heap
// memory, so the whole set is dropped (missing a later bug beats a false report).
void forget_host_pointers() noexcept;

}  // namespace cuaudit::inject
