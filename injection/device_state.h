// What a device's memory looks like beyond cuMemGetInfo, written as DeviceState records: the
// stream-ordered pool of the device (reserved versus used, high-water marks) and, right after an
// allocation failed, the memory other processes hold on it (NVML, loaded at run time where the
// driver provides it). Driver calls only, never the runtime; call only from a callback (or the
// sampler thread) behind the re-entrancy guard.
#pragma once

#include <cstdint>

namespace cuaudit::inject {

// An allocation on `device` failed just now: samples the device (cuMemGetInfo, not rate-limited)
// and writes its pool use and the other processes' memory. `device` < 0 (host memory): nothing.
void record_state_at_failed_allocation(int32_t device) noexcept;

// The program made a stream-ordered allocation: from now on the memory samples carry the pools.
void note_stream_ordered_use() noexcept;
bool stream_ordered_in_use() noexcept;

// A context on `device` was created: its name and total memory, written once per device.
void record_device_info(int32_t device) noexcept;

// In a forked child: its trace describes the devices again (the parent's did).
void forget_device_info_in_child() noexcept;

// The pool of `device` (only once stream-ordered allocations were made), with a memory sample.
void record_pool_state(int32_t device) noexcept;

}  // namespace cuaudit::inject
