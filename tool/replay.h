// Replays a process's allocations and releases in order and says what was still live at the end.
#pragma once

#include <cstdint>
#include <vector>

#include "trace_model.h"

namespace cuaudit {

// Why a leaked allocation's life ended without the program releasing it.
enum class LeakEnd : uint8_t {
  ProcessExit,       // still live when the process exited
  ContextDestroyed,  // reclaimed by cudaDeviceReset / cuCtxDestroy, never released by the program
  ProcessDied,       // live when the trace ends and the process never reached exit processing
};

struct LeakedAllocation {
  Event allocation;  // the allocation event that made it live
  LeakEnd end;
};

struct ReplayResult {
  std::vector<LeakedAllocation> leaks;
  uint64_t allocations = 0;        // successful allocation calls
  uint64_t releases = 0;           // successful release calls
  uint64_t failed_allocations = 0;
  // Releases that CUDA refused because it was already shutting down (cudaErrorCudartUnloading
  // from a static destructor): the program did release them, so they are not its leaks.
  uint64_t released_during_shutdown = 0;
  uint64_t unmatched_releases = 0;  // successful releases of keys cuaudit never saw allocated
};

ReplayResult replay(const ProcessTrace& trace);

}  // namespace cuaudit
