// The one seam to CUPTI: subscribes cuaudit's callback and enables the callback ids it needs:
// the tracked driver allocation and release ids (per id: the driver is called far more often
// than the program calls it) and every runtime id (any runtime call can fail).
#pragma once

#include <cstddef>

namespace cuaudit::inject {

// Returns false with a reason (for the user) when CUPTI refused us, e.g. because another
// CUPTI tool (compute-sanitizer, Nsight) already holds the single subscriber slot.
// `record_call_sites`: also record the site of every successful runtime call (--check-api-results).
// `check_launches`: check kernel launch parameters (--check-launch-params).
// `track_resources`: also record streams, events, graphs, modules and other handles (--track-resources).
bool subscribe_callbacks(bool record_call_sites, bool check_launches, bool track_resources, char* error,
                         size_t error_bytes) noexcept;

}  // namespace cuaudit::inject
