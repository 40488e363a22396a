// Which addresses this process can read, from a copy of /proc/self/maps: the launch checks ask
// about many integers that look like host addresses (strides, sizes and divisors' magic numbers in
// PyTorch's offset calculators), and asking the kernel costs a system call each, a failing one
// (EFAULT) about 16 µs in a VM (docs/PERFORMANCE.md). Lock-free for readers (a sequence lock);
// re-read when an address is in no readable mapping of the copy and was not found absent before
// (the same integers come back at every step), at most every 10 ms and at most 1% of the time.
#pragma once

#include <cstdint>
#include <optional>

namespace cuaudit::inject {

// Whether `address` lies in a readable mapping; nullopt when the copy cannot say (being re-read
// by another thread, more mappings than it holds, the file unreadable): ask the kernel then.
std::optional<bool> in_readable_mapping(uint64_t address) noexcept;

// CUAUDIT_STATS=1: how many mappings the copy holds and what re-reading it cost.
void log_mapping_stats() noexcept;

}  // namespace cuaudit::inject
