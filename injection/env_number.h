// A whole-number setting the launcher passes through the environment (CUAUDIT_FLUSH_INTERVAL_MS,
// CUAUDIT_STACK_SAMPLE_BYTES, ...), read once at start inside the user's process.
#pragma once

#include <cstdint>

namespace cuaudit::inject {

// The value of `name`, at most `max`; `fallback` when unset or empty, and, with a warning that names
// `what` (the unit: "bytes", "milliseconds"), when it is not a plain decimal number in range. Leaves
// the program's errno as it was.
uint64_t number_from_env(const char* name, uint64_t fallback, uint64_t max, const char* what) noexcept;

}  // namespace cuaudit::inject
