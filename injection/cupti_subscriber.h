// The one seam to CUPTI: subscribes cuaudit's callback and enables the callback ids it needs:
// the tracked driver allocation and release ids (per id: the driver is called far more often
// than the program calls it) and every runtime id (any runtime call can fail).
#pragma once

#include <cupti.h>

#include <cstddef>

namespace cuaudit::inject {

struct SubscribeOptions {
  bool record_call_sites = false;  // also record the site of every successful runtime call (--check-api-results)
  bool check_launches = true;      // check kernel launch parameters (--check-launch-params)
  bool track_resources = false;    // also record streams, events, graphs, modules, ... (--track-resources)
  // Benchmarks only (CUAUDIT_EMPTY_CALLBACKS=1): the same callbacks enabled, with empty bodies: the
  // floor of what observing the program through CUPTI costs, whatever cuaudit does in them.
  bool empty_callbacks = false;
};

// Returns false with a reason (for the user) when CUPTI refused us, e.g. because another
// CUPTI tool (compute-sanitizer, Nsight) already holds the single subscriber slot.
bool subscribe_callbacks(const SubscribeOptions& options, char* error, size_t error_bytes) noexcept;

// The function CUPTI calls for every callback subscribe_callbacks enables: the CPU benchmark of the
// callbacks (bench/cpu/callbacks.cpp) calls it with callback data built as CUPTI builds it.
CUpti_CallbackFunc cupti_callback() noexcept;

}  // namespace cuaudit::inject
