// What one process's trace says, decoded: the facts the analysis works on.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <optional>
#include <variant>

#include "api_table.h"
#include "stack_sample_weights.h"
#include "trace_format.h"

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
  FailedCall,    // another runtime call failed
  LastError,     // cudaGetLastError / cudaPeekAtLastError returned an error
  CallSite,      // a successful runtime call (recorded with --check-api-results)
  Signal,        // a fatal signal reached the process
  ExitCall,      // exit/_exit/_Exit/quick_exit
  LaunchParam,   // a kernel parameter failed a launch check
  GraphMemNode,  // a memory alloc or free node was added to a graph
  GraphChange,   // a graph was instantiated, cloned or destroyed
  GraphLaunch,   // an executable graph was launched
  PoolSegment,   // a pool took memory to hand blocks out of, or gave it back
  PoolFigures,   // a pool said itself what it held (XLA's allocator statistics): no segments to measure
};

// An allocation or release by a tracked API (Alloc, Free): complete on its own, since the replay
// keeps it as the live allocation and as the release a later finding points back to.
// Its fields are ordered by size: the live set holds one per live allocation, a million at times.
struct MemoryEvent {
  uint64_t seq = 0;
  uint64_t time_ns = 0;
  uint64_t stack_id = 0;
  uint64_t key = 0;  // pointer or handle (KeySpace of the API)
  uint64_t bytes = 0;
  uint64_t python_stack_id = 0;  // Alloc: the Python stack it was made from (0: none)
  uint64_t launches = 0;         // Alloc from Python: kernel launches before it
  uint64_t graph_launches = 0;   // graph memory: launches of its graph so far (this one included)
  uint32_t tid = 0;
  uint32_t context_uid = 0;                // CUDA memory: its context (blocks belong to none)
  int32_t device = trace::kUnknownDevice;  // or trace::kHostDevice
  int32_t result = 0;                      // what the call returned to the program
  uint32_t call_ns = 0;                    // time inside the call (saturated); 0: not measured
  uint32_t pool = 0;     // a pool's block (api is a block operation): the pool (ProcessTrace::pools) it came from
  Api api = Api::Count;  // a CUDA API, or a pool's block operation (memory_sources.inc)
};
static_assert(sizeof(MemoryEvent) == 96, "MemoryEvent grew: the live set grows with it");

// A context was created or destroyed (its allocations die with it).
struct ContextChange {
  uint32_t context_uid = 0;
  int32_t device = trace::kUnknownDevice;
};

// A runtime call that is not an allocation or release (FailedCall, LastError, CallSite).
struct RuntimeCall {
  uint32_t cbid = 0;  // CUPTI runtime callback id; ProcessTrace::runtime_names names it
  int32_t result = 0;
};

struct SignalFact {
  int32_t signal = 0;
};

struct ExitFact {
  int32_t status = 0;
  trace::ExitHow how = trace::ExitHow::Exit;
};

// What requires a kernel parameter's alignment: its type in the kernel's mangled name (checked in
// the target), the kernel's machine code, or the type the program's debug information declares
// (kernel_access.h).
enum class AlignmentSource : uint8_t { Type, Code, DebugInfo };

// What the target found wrong with one kernel parameter at one launch.
struct LaunchParamFact {
  uint64_t value = 0;  // the parameter as passed
  uint32_t kernel_id = 0;
  uint32_t alignment = 0;  // required (alignment_from says by what); 0 unknown
  uint16_t param_index = 0;
  // A word of the parameters (a LaunchBits record), not a typed pointer: the target could not tell
  // it was a pointer, so only evidence makes it a finding (memory the program released, host memory
  // the kernel's code reads through).
  bool word = false;
  bool code_dereferences = false;  // word: the kernel's code loads or stores through it (kernel_access.h)
  uint16_t member_offset = 0;      // word: where it is inside its parameter (a by-value struct's member)
  uint32_t buffer_offset = 0;      // word: where it is in the parameter buffer
  AlignmentSource alignment_from = AlignmentSource::Type;
  const std::string* declared_type = nullptr;  // DebugInfo: the pointee's name (owned by the analysis)
  trace::LaunchProblem problem = trace::LaunchProblem::Misaligned;
  uint8_t path = 0;           // trace::LaunchPath (kept raw: a newer writer may know more paths)
  int32_t driver_result = 0;  // NotAccessible: what cuPointerGetAttributes said
  uint8_t memory_type = 0;    // what the driver said the value was (0: nothing)
  bool host_readable = false;
  int8_t pointer_device = -1;  // PeerNotEnabled: the device the memory is on
  int8_t launch_device = -1;   // PeerNotEnabled: the device the kernel ran on
};

// A module CUDA loaded and what became of its code (ModuleCode).
struct ModuleCodeFact {
  uint64_t hash = 0;  // kernel-code/<16 hex digits>.cubin
  uint64_t bytes = 0;
  uint32_t module_id = 0;
  trace::ModuleCodeStatus status = trace::ModuleCodeStatus::Saved;
};

// A memory node of a graph (GraphMemNode): its memory comes and goes at each launch of the graph.
struct GraphNodeFact {
  uint64_t graph = 0;
  uint64_t node = 0;
  uint64_t dptr = 0;
  uint64_t bytes = 0;
  int32_t device = trace::kUnknownDevice;
  Api api = Api::Count;  // how it was made: cudaGraphAddMemAllocNode, cudaMallocAsync captured, ...
  bool alloc = true;     // false: a free node
};

struct GraphChangeFact {
  trace::GraphChange change = trace::GraphChange::ExecCreated;
  uint64_t graph = 0;
  uint64_t original = 0;
  uint64_t exec = 0;
  uint64_t flags = 0;
};

// A pool's segment (PoolSegment): memory it took to hand blocks out of, or gave back.
struct PoolSegmentFact {
  uint32_t pool = 0;
  uint64_t base = 0;
  uint64_t bytes = 0;
  int32_t device = trace::kUnknownDevice;
  bool mapped = true;  // false: given back
};

// What a pool that does not say where its blocks lie reported of itself on one device.
struct PoolFiguresFact {
  uint32_t pool = 0;
  int32_t device = trace::kUnknownDevice;
  uint64_t reserved = 0;      // the memory it holds to hand blocks out of
  uint64_t used = 0;          // what its blocks hold
  uint64_t largest_free = 0;  // its largest free block
};

struct GraphLaunchFact {
  uint64_t exec = 0;
  int32_t result = 0;
};

// Memory exported to other processes, or imported from one (the import's seq is its allocation's).
struct SharedMemoryFact {
  uint64_t seq = 0;
  uint64_t time_ns = 0;
  uint64_t pointer = 0;
  uint64_t handle_hash = 0;
  trace::SharedRole role = trace::SharedRole::Export;
};

// One fact of the trace, in the process's event order. The payload's type follows the kind:
// MemoryEvent for Alloc and Free, ContextChange for the context kinds, RuntimeCall for the call
// kinds, SignalFact, ExitFact, LaunchParamFact; nothing for ProcessEnd.
struct Event {
  EventKind kind = EventKind::ProcessEnd;
  uint64_t seq = 0;
  uint64_t time_ns = 0;
  uint64_t stack_id = 0;  // kNoStack when the fact has none
  uint32_t tid = 0;
  std::variant<std::monostate, MemoryEvent, ContextChange, RuntimeCall, SignalFact, ExitFact, LaunchParamFact,
               GraphNodeFact, GraphChangeFact, GraphLaunchFact, PoolSegmentFact, PoolFiguresFact>
      payload;

  bool is_memory() const { return kind == EventKind::Alloc || kind == EventKind::Free; }
  const MemoryEvent& memory() const { return std::get<MemoryEvent>(payload); }
  MemoryEvent& memory() { return std::get<MemoryEvent>(payload); }
  const ContextChange& context() const { return std::get<ContextChange>(payload); }
  const RuntimeCall& call() const { return std::get<RuntimeCall>(payload); }
  const SignalFact& signal() const { return std::get<SignalFact>(payload); }
  const ExitFact& exit() const { return std::get<ExitFact>(payload); }
  const LaunchParamFact& launch_param() const { return std::get<LaunchParamFact>(payload); }
  const GraphNodeFact& graph_node() const { return std::get<GraphNodeFact>(payload); }
  const GraphChangeFact& graph_change() const { return std::get<GraphChangeFact>(payload); }
  const GraphLaunchFact& graph_launch() const { return std::get<GraphLaunchFact>(payload); }
  const PoolSegmentFact& pool_segment() const { return std::get<PoolSegmentFact>(payload); }
  const PoolFiguresFact& pool_figures() const { return std::get<PoolFiguresFact>(payload); }
  // What a call returned to the program: memory and runtime-call kinds; 0 for the others.
  int32_t call_result() const {
    if (const auto* m = std::get_if<MemoryEvent>(&payload)) return m->result;
    if (const auto* c = std::get_if<RuntimeCall>(&payload)) return c->result;
    return 0;
  }
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

// A device's pool use and, at a failed allocation, the other processes' memory (DeviceState).
struct DeviceState {
  uint64_t seq = 0;
  uint64_t time_ns = 0;
  int32_t device = 0;
  bool at_failed_allocation = false;
  std::optional<uint64_t> pool_reserved, pool_used, pool_reserved_high, pool_used_high;
  std::optional<uint64_t> other_processes_bytes;  // none: NVML could not say
};

// A pool whose blocks the trace records (an NVTX heap, a framework's allocator).
struct PoolInfo {
  MemorySource kind = MemorySource::NvtxHeap;  // its source (memory_sources.inc)
  std::string name;                            // as the program named it; may be empty
  uint64_t base = 0;
  uint64_t bytes = 0;
  uint64_t stack_id = 0;
  int32_t device = trace::kUnknownDevice;
};

// An out-of-memory error a framework's allocator raised itself (PyTorch's history keeps them).
struct FrameworkOom {
  uint32_t pool = 0;
  uint64_t time_ns = 0;
  int32_t device = trace::kUnknownDevice;
  uint64_t requested = 0;    // the bytes asked for
  uint64_t device_free = 0;  // what the device had free then, as the allocator saw it (PyTorch)
  // The allocator's own statistics then (XLA's; 0: not said): the most it may hold, what its
  // blocks held, and its largest free block.
  uint64_t limit = 0, in_use = 0, largest_free = 0;
};

// A device the process had a context on.
struct DeviceInfo {
  std::string name;  // "NVIDIA H200"
  uint64_t total_bytes = 0;
};

// The memory samples kept of one process (about 11 minutes of 100 a second): beyond, neighbouring
// samples are merged two into one, the higher use kept (3 MB of memory, whatever the run's length).
inline constexpr size_t kMaxSamples = 65536;

// What unified memory did to a managed range (trace::MigrationKind says what `value` is), on the
// trace's clock. Kept beside the events, not among them: CUPTI hands them over late and unordered.
struct ManagedMigration {
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t address = 0;
  uint64_t value = 0;
  uint32_t src_id = 0, dst_id = 0;
  trace::MigrationKind kind = trace::MigrationKind::HostToDevice;
  trace::MigrationCause cause = trace::MigrationCause::Unknown;
};
// The migrations kept of one process (48 MB at most); beyond, the rest are counted, and said.
inline constexpr size_t kMaxManagedMigrations = size_t(1) << 20;

// A kernel's run on a GPU (trace::KernelSpanRecord), recorded once the program has managed memory:
// the page faults inside it are the kernel's.
struct KernelSpan {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t kernel_id = 0;  // ProcessTrace::kernels names it
  uint32_t device = 0, stream = 0;
};
// The kernel runs kept of one process (32 MB at most); beyond, the rest are counted, and said.
inline constexpr size_t kMaxKernelSpans = size_t(1) << 20;

// --device-heap: a launch of a patched kernel (trace::DeviceHeapLaunchRecord) and each device-side
// malloc or free its threads made, in the order the GPU made them.
struct DeviceHeapLaunchFact {
  uint64_t launch_id = 0, time_ns = 0, stack_id = 0;
  uint64_t function_pc = 0, function_bytes = 0;
  uint64_t heap_bytes = 0;
  std::array<uint32_t, 3> grid{}, block{};
  int32_t device = -1;
  std::string name;  // as the driver gave it (mangled for C++ kernels)
  // How far into the kernel's own code `pc` is; none when it lies outside (a device function the
  // kernel called) or the code's range was not recorded.
  std::optional<uint64_t> code_offset(uint64_t pc) const {
    if (!function_bytes || pc < function_pc || pc - function_pc >= function_bytes) return std::nullopt;
    return pc - function_pc;
  }
};
struct DeviceHeapCallFact {
  uint64_t launch_id = 0, pc = 0, address = 0, bytes = 0;
  trace::DeviceHeapCall kind = trace::DeviceHeapCall::Malloc;
};
// The calls kept of one process (320 MB at most); beyond, the rest are counted, and said.
inline constexpr size_t kMaxDeviceHeapCalls = size_t(1) << 23;

struct ProcessTrace {
  std::string file;
  uint64_t pid = 0;
  uint64_t parent_pid = 0;
  std::vector<std::string> command;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  std::vector<ModuleInfo> modules;                             // in recording order
  std::unordered_map<uint64_t, std::vector<uint64_t>> stacks;  // id -> return addresses
  std::vector<Event> events;                                   // sorted by seq
  std::vector<MemorySample> samples;                           // sorted by seq
  uint64_t samples_thinned = 0;            // samples dropped to keep a long run's timeline within kMaxSamples
  std::vector<DeviceState> device_states;  // sorted by seq
  std::map<int32_t, DeviceInfo> devices;   // ordinal -> name and memory
  std::unordered_map<uint32_t, std::string> runtime_names;                   // cbid -> "cudaMemcpy_v3020"
  std::unordered_map<uint32_t, std::string> kernels;                         // kernel id -> name as the driver gave it
  std::unordered_map<uint64_t, std::vector<PythonFrameInfo>> python_stacks;  // id -> frames
  std::unordered_map<uint64_t, std::array<uint64_t, 2>> call_pointers;       // failed copy's seq -> its pointers
  std::vector<SharedMemoryFact> shared_memory;                               // IPC and pool exports and imports
  std::map<uint32_t, PoolInfo> pools;                                        // pool number -> what it is
  std::vector<FrameworkOom> framework_ooms;                                  // out of memory, said by a pool
  std::vector<ModuleCodeFact> module_code;                                   // what became of each module's code
  std::vector<std::string> notices;                                          // from the injection
  std::vector<ManagedMigration> managed_migrations;  // in recording order, kMaxManagedMigrations at most
  uint64_t managed_migrations_dropped = 0;           // beyond kMaxManagedMigrations
  std::vector<KernelSpan> kernel_spans;              // in recording order, kMaxKernelSpans at most
  uint64_t kernel_spans_dropped = 0;                 // beyond kMaxKernelSpans
  std::unordered_map<uint64_t, DeviceHeapLaunchFact> device_heap_launches;  // --device-heap: launch id -> launch
  std::vector<DeviceHeapCallFact> device_heap_calls;  // in the GPU's order, kMaxDeviceHeapCalls at most
  uint64_t device_heap_calls_dropped = 0;             // beyond kMaxDeviceHeapCalls
  // Source lines of the device-heap calls' places, (kernel, offset in its code) -> "file:line", from
  // the kept cubins' line tables (tool/kernel_code/device_heap_lines.h): filed before the checks.
  std::map<std::pair<std::string, uint64_t>, std::string> device_heap_lines;
  bool device_heap_mode = false;  // recorded with --device-heap
  bool tracked = true;            // false when the injection could not subscribe
  bool reached_exit = false;      // a ProcessEnd record was seen
  // Version 6 on: whether the last record read was the writer's closing mark (TraceClosedRecord);
  // unknown in older traces.
  std::optional<bool> ends_closed;
  // A framework's file of this process (torch-blocks-<pid>.json, ...) could not be read: its
  // verdicts are lost, so the report is incomplete.
  bool side_file_damaged = false;
  bool exit_called = false;        // an ExitCall record was seen (_exit, quick_exit, exit from a handler)
  uint32_t flush_interval_ms = 0;  // 0: unknown (a trace from before it was recorded)
  StackSampling stack_sampling;    // watch mode: which allocations' stacks are a sample
  // What the launcher's compaction of a long run's trace left out (CompactionRecord): none when the
  // trace was never compacted.
  std::optional<trace::CompactionRecord> compaction;
  std::vector<std::string> problems;  // damage found while reading (truncation, ...)
  // Which of the problems says the file ends inside a chunk: damage for a process that ended, the
  // chunk being written for one still running (`cuaudit snapshot`).
  std::optional<size_t> cut_short_problem;
  // What only a finished trace can be judged by (tool/trace/chunk_screen.h counts it, run_integrity.cpp
  // says it): process records read, events of the program's calls, and events naming a stack the
  // trace never recorded. A running process's buffers may hold its first records yet.
  struct RecordCounts {
    size_t process_records = 0, program_events = 0, unrecorded_stacks = 0, unrecorded_stack_events = 0;
  } record_counts;

  // Seconds from the process's start to monotonic time `ns`, as every report shows times. A trace
  // without its start time (written before it was recorded) counts from its first event or sample.
  double seconds_since_start(uint64_t ns) const {
    uint64_t start = start_monotonic_ns;
    if (start == 0) {
      start = ns;
      if (!events.empty()) start = std::min(start, events.front().time_ns);
      if (!samples.empty()) start = std::min(start, samples.front().time_ns);
    }
    return ns > start ? static_cast<double>(ns - start) / 1e9 : 0.0;
  }
};

// How caches beside a trace name a module: by build id, which survives copying and renaming, or
// by path when the object has none.
inline std::string module_cache_key(const ModuleInfo& m) {
  return m.build_id.empty() ? "path:" + m.path : "build-id:" + m.build_id;
}

// The name users know for an event's API: "cudaMalloc", "cudaMemcpy" (CUPTI's "_v3020" and
// per-thread-stream "_ptsz"/"_ptds" suffixes removed).
std::string event_api_name(const ProcessTrace& trace, const Event& e);
std::string runtime_call_name(const ProcessTrace& trace, uint32_t cbid);

}  // namespace cuaudit
