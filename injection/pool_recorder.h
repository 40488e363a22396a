// Blocks that pools hand out of memory they already hold: the program's own pools annotated with
// NVTX (nvtx_memory.cpp) and framework pools through their hooks (CuPy's memory hook, which calls
// the C entry points below through ctypes). Each pool gets a number and a Pool record; each block
// handed out or returned is a PoolBlock record (its source, pool and operation), with its stacks;
// the memory a pool hands blocks out of is its segments (PoolSegment records).
#pragma once

#include <cstdint>

#include "api_table.h"
#include "trace_format.h"

namespace cuaudit::inject {

// A new pool: its number (from 1; 0 when the trace cannot take it). `stack` is where it was made.
// A pool that names its range (an NVTX heap's) gets that range as its one segment.
uint32_t register_pool(MemorySource kind, const char* name, uint64_t base, uint64_t bytes, int32_t device,
                       uint64_t stack) noexcept;

// Without launch checks (--check-launch-params no, watch mode) nobody asks in_returned_pool_block,
// so blocks are not tracked for it: a returned block then takes no lock shared with other threads.
void set_pool_blocks_tracked_for_launches(bool tracked) noexcept;

// The stack of a block operation of `bytes` (0 for a release): walked, or kNoStack where watch
// mode's sampling leaves it out (stack_sampling.h).
uint64_t pool_block_stack(bool handed_out, uint64_t bytes) noexcept;

// Memory pool `pool` took to hand blocks out of (mapped), or gave back.
void record_pool_segment(uint32_t pool, bool mapped, uint64_t base, uint64_t bytes, int32_t device,
                         uint64_t stack) noexcept;

// One block operation (`api`: a pool's, memory_sources.inc) by pool `pool`. `stack` is the
// caller's (captured once for a batch, or kNoStack when not sampled); handed-out blocks with a
// stack also get the Python stack.
void record_pool_block(Api api, uint32_t pool, uint64_t key, uint64_t bytes, int32_t device, uint64_t stack) noexcept;

// Whether `pointer` lies in an NVTX-annotated block its pool took back and has not handed out
// again (the launch checks call it for every pointer argument: one relaxed load while no block
// was ever returned). Remembers the latest blocks returned (returned_blocks.h); older ones are
// not checked (never a false report).
bool in_returned_pool_block(uint64_t pointer) noexcept;

// In a forked child: the launch checks' view of returned blocks must not stay locked by a thread
// of the parent that no longer exists.
void reset_pool_state_after_fork() noexcept;

// The device that memory at `pointer` is on (kUnknownDevice when not known): the injection sets it
// once the driver is at hand; until then every pool's device is unknown.
using DeviceOfPointer = int32_t (*)(uint64_t pointer);
void set_device_of_pointer(DeviceOfPointer lookup) noexcept;
int32_t device_of_pointer(uint64_t pointer) noexcept;

}  // namespace cuaudit::inject
