// What unified memory costs: CUPTI's unified-memory counters (bytes moved each way, page faults,
// thrashing, throttling) as ManagedMigration records, the tool attributing each to the managed
// allocation that contains its address. Enabled only once the program has made a managed
// allocation, so a program without one pays nothing. Where CUPTI gives no such records (NVIDIA
// documents ARM hosts such as Grace, and devices without the counters), a notice says so.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit::inject {

// At the program's first successful managed allocation (idempotent, any thread).
void start_unified_memory_records() noexcept;

// At exit: CUPTI hands over the records it still holds.
void flush_unified_memory_records() noexcept;

// One activity buffer CUPTI completed: each unified-memory counter record in it becomes a
// ManagedMigration record. Returns how many were written. Read with CUPTI's own parser
// (cuptiActivityGetNextRecord), so the tests hand it buffers built from CUPTI's structs.
size_t record_unified_memory_buffer(uint8_t* buffer, size_t valid_bytes) noexcept;

}  // namespace cuaudit::inject
