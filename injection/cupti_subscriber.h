// The one seam to CUPTI: subscribes cuaudit's callback and enables exactly the callback ids
// it needs (per id, never whole domains: every enabled id costs the program time).
#pragma once

#include <cstddef>

namespace cuaudit::inject {

// Returns false with a reason (for the user) when CUPTI refused us, e.g. because another
// CUPTI tool (compute-sanitizer, Nsight) already holds the single subscriber slot.
bool subscribe_callbacks(char* error, size_t error_bytes) noexcept;

}  // namespace cuaudit::inject
