// The injection's clocks, shared by every recorder: the process-wide event order, the count of
// kernel launches (the clock of the program's work) and the allocation and release epochs that
// tell the launch checks when a cached answer about a pointer may have gone stale; the events'
// clocks and thread ids. Lock-free; knows nothing of CUDA or the trace.
#pragma once

#include <cstdint>

namespace cuaudit::inject {

// Next value of the process-wide event order (every record that must be merged across threads).
uint64_t next_sequence() noexcept;

// Kernel launches so far, process-wide (counted per thread, published every 64): the clock that
// tells a program's steady state from growth, since it advances only while the program works.
void note_launch() noexcept;
uint64_t launches_so_far() noexcept;

// Bumped by every successful tracked allocation and release (and context destruction): a launch
// check that found a pointer valid (or invalid) may reuse that answer until memory is released
// (or allocated).
uint64_t allocation_epoch() noexcept;
uint64_t release_epoch() noexcept;
void note_allocation() noexcept;
void note_release() noexcept;
// Bumped whenever an NVTX pool's block is handed out, taken back or resized: the launch checks'
// answer for a pointer into a pool (in_returned_pool_block) may have changed.
uint64_t pool_block_epoch() noexcept;
void note_pool_block_change() noexcept;

// The range of addresses CUDA handed out so far (device, pinned, managed and reserved memory):
// the launch checks take no word of a kernel's parameters outside it for a pointer.
void note_handed_out(uint64_t start, uint64_t bytes) noexcept;
bool in_handed_out_range(uint64_t value) noexcept;

// The time of an event (monotonic: order and durations; realtime: beside other programs' clocks,
// such as PyTorch's history) and the calling thread's id.
uint64_t monotonic_ns() noexcept;
uint64_t realtime_ns() noexcept;
uint32_t current_tid() noexcept;
// In a forked child: its only thread has a new id, the one current_tid() kept is the parent's.
void forget_current_tid() noexcept;
// The same without touching thread-local storage: for signal handlers and exit paths. A
// thread_local of a dlopen'ed library is allocated at its first use on a thread, with malloc, which
// deadlocks in a handler that interrupted malloc.
uint32_t current_tid_signal_safe() noexcept;

}  // namespace cuaudit::inject
