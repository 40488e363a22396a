// Host call stacks as raw return addresses, interned by content hash.
#pragma once

#include <cstdint>

namespace cuaudit::inject {

// Captures the calling thread's stack and returns its id. The first time this thread sees a
// stack, its StackRecord (and any module not yet recorded) is appended to the trace before the
// id is returned, so every event's stack precedes it in the thread's own chunk order.
uint64_t capture_stack() noexcept;

// Forgets which stacks this thread wrote (a forked child starts a trace of its own).
void forget_written_stacks() noexcept;

}  // namespace cuaudit::inject
