// What one process's trace says, decoded: the facts the analysis works on.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "api_table.h"

namespace cuaudit {

struct ModuleInfo {
  uint64_t load_bias = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  std::string path;
  std::string build_id;  // lowercase hex, empty when the object has none
};

enum class EventKind : uint8_t {
  Alloc,
  Free,
  ContextCreated,
  ContextDestroyed,
  ProcessEnd,
  FailedCall,  // another runtime call failed (cbid names it)
  LastError,   // cudaGetLastError / cudaPeekAtLastError returned an error
  CallSite,    // a successful runtime call (recorded with --check-api-results)
  Signal,      // a fatal signal reached the process (result: the signal number)
  ExitCall,    // exit/_exit/_Exit/quick_exit (result: the status; cbid: trace::ExitHow)
  LaunchParam, // a kernel parameter failed a launch check (key: its value; launch: the rest)
};

// What the target found wrong with one kernel parameter at one launch.
struct LaunchParamFact {
  uint32_t kernel_id = 0;
  uint32_t alignment = 0;   // required by its type; 0 unknown
  uint16_t param_index = 0;
  uint8_t problem = 0;      // trace::LaunchProblem
  uint8_t path = 0;         // trace::LaunchPath
  uint8_t memory_type = 0;  // what the driver said the value was (0: nothing)
  bool host_readable = false;
};

struct Event {
  EventKind kind;
  Api api = Api::Count;  // Alloc and Free only
  uint64_t seq = 0;
  uint64_t time_ns = 0;
  uint64_t key = 0;
  uint64_t bytes = 0;
  uint64_t stack_id = 0;
  uint32_t tid = 0;
  uint32_t context_uid = 0;
  int32_t device = -2;
  int32_t result = 0;
  uint32_t cbid = 0;  // FailedCall, LastError, CallSite: the runtime callback id
  LaunchParamFact launch = {};  // LaunchParam only
  uint64_t python_stack_id = 0;  // Alloc: the Python stack it was made from (0: none)
  uint64_t launches = 0;         // Alloc from Python: kernel launches before it
};

// One frame of a Python stack, innermost first.
struct PythonFrameInfo {
  std::string file;
  uint32_t line = 0;
  std::string function;
};

// One cuMemGetInfo reading, for the memory timeline.
struct MemorySample {
  uint64_t seq = 0;
  uint64_t time_ns = 0;
  int32_t device = 0;
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
  uint64_t launches = 0;  // kernel launches so far (0 in traces that do not say)
};

struct ProcessTrace {
  std::string file;
  uint64_t pid = 0;
  uint64_t parent_pid = 0;
  std::vector<std::string> command;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  std::vector<ModuleInfo> modules;                                // in recording order
  std::unordered_map<uint64_t, std::vector<uint64_t>> stacks;     // id -> return addresses
  std::vector<Event> events;                                      // sorted by seq
  std::vector<MemorySample> samples;                              // sorted by seq
  std::unordered_map<uint32_t, std::string> runtime_names;         // cbid -> "cudaMemcpy_v3020"
  std::unordered_map<uint32_t, std::string> kernels;               // kernel id -> name as the driver gave it
  std::unordered_map<uint64_t, std::vector<PythonFrameInfo>> python_stacks;  // id -> frames
  std::unordered_map<uint64_t, std::array<uint64_t, 2>> call_pointers;  // failed copy's seq -> its pointers
  std::vector<std::string> notices;                               // from the injection
  bool tracked = true;         // false when the injection could not subscribe
  bool reached_exit = false;   // a ProcessEnd record was seen
  uint32_t flush_interval_ms = 0;  // 0: unknown (a trace from before it was recorded)
  std::vector<std::string> problems;  // damage found while reading (truncation, ...)
};

// How caches beside a trace name a module: by build id, which survives copying and renaming, or
// by path when the object has none.
inline std::string module_cache_key(const ModuleInfo& m) {
  return m.build_id.empty() ? "path:" + m.path : "build-id:" + m.build_id;
}

// The name users know for an event's API: "cudaMalloc", "cudaMemcpy" (CUPTI's "_v3020" and
// per-thread-stream "_ptsz"/"_ptds" suffixes removed).
std::string event_api_name(const ProcessTrace& trace, const Event& e);

}  // namespace cuaudit
