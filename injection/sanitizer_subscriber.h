// --device-heap: the injection subscribes to the Compute Sanitizer API instead of CUPTI (one tool
// holds a process's callbacks: docs/RESOURCES.md). Every module whose code calls device-side
// malloc is patched as it loads, so that each device malloc and free also runs a device function
// of cuaudit's (device_heap_patches.cu) that leaves the call in a buffer the host reads
// (device_heap_calls.h); each launch of such a kernel is recorded with its host stack. Host
// allocations are recorded from the API's memory callbacks.
#pragma once

#include <cstddef>

namespace cuaudit::inject {

// At InitializeInjection, before any other CUDA work. False with `error` set when the library
// (CUAUDIT_SANITIZER_LIBRARY), the patches or the subscription are missing.
bool subscribe_device_heap(char* error, size_t error_bytes) noexcept;

// At exit: the calls still in the buffers become records; calls that found no room are said.
void flush_device_heap() noexcept;

}  // namespace cuaudit::inject
