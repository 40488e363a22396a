// Watch mode's stack sampling (--mode watch, docs/LONG_RUNNING.md): every allocation and release
// is still recorded, but only some allocations walk their host stack, the costliest part of an
// event. Sampling is by bytes, as tcmalloc's and Go's heap profilers do: each thread counts down an
// exponentially distributed number of bytes (mean CUAUDIT_STACK_SAMPLE_BYTES) and the allocation
// that crosses zero is sampled, so an allocation of b bytes is sampled with probability
// 1 - exp(-b / mean), whatever came before it on its thread, and the tool can weigh it by the
// inverse (golang/go#26618: weighing by bytes / mean instead over-counted large ones by 58%).
// Allocations of CUAUDIT_STACK_EXACT_BYTES or more (GPU allocations are few and large) always
// walk their stack. Releases walk none unless they fail; nothing here takes a lock.
#pragma once

#include <cstdint>

namespace cuaudit::inject {

// From the environment, once at start: mean_bytes 0 turns sampling off (every event's stack).
void configure_stack_sampling(uint64_t mean_bytes, uint64_t exact_bytes) noexcept;
bool stacks_sampled() noexcept;

// Whether an allocation of `bytes` that returned `result` walks its stack now (always, with
// sampling off or when it failed: an out-of-memory error is reported at its line).
bool take_allocation_stack(uint64_t bytes, int32_t result = 0) noexcept;

// Whether a release that returned `result` walks its stack (with sampling on: only a failed one).
bool take_release_stack(int32_t result = 0) noexcept;

// With sampling on, the trace says so (a StackSampling record), after ProcessInfo.
void record_stack_sampling() noexcept;

}  // namespace cuaudit::inject
