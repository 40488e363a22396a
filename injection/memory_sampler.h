// The memory timeline's raw data: what cuMemGetInfo says about each device the program uses.
//
// Two sources of samples, both written as MemorySample records:
// - a sampler thread reads every context's device every interval (default 10 ms). It keeps a
//   context current on its own thread only, calls only the driver (never the runtime, whose
//   per-thread state belongs to the program) and takes no lock a program thread needs: a
//   context being destroyed waits at most for the one cuMemGetInfo in flight on it;
// - the program's own threads, right after an allocation or release, at most once a
//   millisecond, so that phases shorter than the interval still show.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace cuaudit::inject {

// Starts the sampler thread (interval_ms 0: no samples at all, neither periodic nor at calls).
void start_memory_sampler(unsigned interval_ms) noexcept;

// Context lifetime, from the resource callbacks.
void sampler_context_created(CUcontext context, int32_t device) noexcept;
void sampler_context_destroying(CUcontext context) noexcept;

// An allocation or release on `device` just finished on this thread: the sampler thread takes a
// round within a millisecond (the program's thread only sets a flag).
void sample_after_memory_change(int32_t device) noexcept;

// An allocation on `device` failed just now on this thread: one sample at once, whatever the rate
// limit or --sample-interval (the out-of-memory finding needs the device's state at that moment).
void sample_at_failed_allocation(int32_t device) noexcept;

// Exit processing started: stops sampling for good, waiting at most for the sample in flight,
// since CUDA tears contexts down after this.
void stop_memory_sampler() noexcept;

// In a forked child: the parent's contexts are not this process's and its sampler thread is not
// here (nor is anything it was doing at the fork, so nothing is waited for).
void forget_memory_sampler_in_child() noexcept;

}  // namespace cuaudit::inject
