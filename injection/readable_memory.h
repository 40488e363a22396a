// Whether this process can read memory at an address, asked without touching it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit::inject {

// True when the `bytes` (at most 4096) at `address` can be read: write(2) from them into a pipe
// fails with EFAULT for unmapped or unreadable (PROT_NONE, as CUDA reserves device address space)
// pages instead of faulting. A system call: for rare questions only.
bool readable_memory(uint64_t address, size_t bytes = 1) noexcept;

// The same for one byte, from the process's mappings as last read (readable_mappings.h), asking
// the kernel only when they cannot say: the launch checks ask about many integers that look like
// addresses. An answer may lag a mapping made in the last 10 ms: for questions that only decide
// what to record, never before reading the memory.
bool readable_memory_cached(uint64_t address) noexcept;

}  // namespace cuaudit::inject
