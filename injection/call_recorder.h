// Turns tracked API calls into trace events. Knows nothing of CUPTI: the callback layer decodes
// CUPTI's parameter structs into ApiCall and calls in here, and the unit tests do the same.
//
// A runtime call reaches the driver through nested driver callbacks (cudaMalloc -> cuMemAlloc_v2).
// That is one allocation, named by the API the program called: only the outermost tracked call
// active on a thread is recorded.
#pragma once

#include <cstdint>

#include "api_table.h"
#include "trace_format.h"

namespace cuaudit::inject {

struct ApiCall {
  Api api;
  uint64_t key = 0;  // pointer or handle, valid at exit
  uint64_t bytes = 0;
  int32_t result = 0;  // what the call returned to the program
  uint32_t context_uid = 0;
  int32_t device = trace::kUnknownDevice;
  uint64_t handle_hash = 0;  // imports: hash of the IPC handle or export data (SharedMemoryRecord)
  uint64_t stream = 0;       // stream-ordered calls: the stream
  bool captured = false;     // captured into a graph: its graph memory node stands for it, nothing is recorded
};

// ENTER of a tracked call: `api` names it.
void on_call_enter(Api api) noexcept;

// EXIT of a tracked call. Calls whose ENTER was never seen (made before cuaudit subscribed)
// are ignored when nested; an outermost one is recorded without a pre-call sequence number.
// Returns whether the call was recorded (it was the outermost tracked call).
bool on_call_exit(const ApiCall& call) noexcept;

// Whether the EXIT of `api` now is that of the outermost tracked call on this thread (the one
// on_call_exit records).
bool is_outermost_exit(Api api) noexcept;

// After the allocation event `seq`: its Python stack (an AllocPythonRecord), when made from Python.
void record_python_stack_of(uint64_t seq) noexcept;

// An IPC or pool export: the exporter's side of memory another process may import.
void on_memory_exported(uint64_t pointer, uint64_t handle_hash) noexcept;

// Other runtime calls, by CUPTI callback id: a failure, an error retrieved through
// cudaGetLastError/cudaPeekAtLastError, or (lint mode) a successful call's site. `name` is the
// callback's name, written to the trace the first time the id appears.
// `pointers`: for a failed copy or memset, the pointers it was given (else null).
enum class CallFact { Failed, LastError, Site };
void on_runtime_call(CallFact fact, uint32_t domain, uint32_t cbid, const char* name, int32_t result,
                     const uint64_t (*pointers)[2] = nullptr) noexcept;

// Context lifetime: allocations of a destroyed context are gone with it.
void on_context_created(uint32_t context_uid, int32_t device) noexcept;
void on_context_destroyed(uint32_t context_uid, int32_t device) noexcept;

// What cuMemGetInfo said about `device` just now (the memory timeline).
void record_memory_sample(int32_t device, uint64_t free_bytes, uint64_t total_bytes) noexcept;

// The process reached exit processing (atexit): mark it in the trace.
void on_process_end() noexcept;

}  // namespace cuaudit::inject
