// The cuaudit trace file: the one contract between the injection (writer) and the tool (reader).
//
// One file per process, `trace-<pid>.cutrace`, made of a FileHeader followed by chunks. Each thread
// fills its own buffer and appends it as one chunk with a single write(2) on an O_APPEND descriptor,
// so chunks of different threads never interleave and a crash loses at most the unwritten buffers.
// A chunk is a ChunkHeader followed by records; each record starts with a RecordHeader whose size
// covers the whole record (padded to 8 bytes). Events carry a process-wide sequence number: the
// reader merges the chunks of all threads by it.
//
// Each record type is declared once, in trace_records.inc: its number, its struct and its size.
// The writer's typed append sets the header from that list; the reader has one parse function
// per struct. The records are declared by topic: framing and the record header
// (trace_framing.h), the process, its calls and its samples (here), launches and kernel code
// (trace_launch_records.h), graph, shared and pool memory (trace_memory_records.h). To add a
// record: define its struct in the header of its topic, add one line to trace_records.inc, write
// it in the injection and add its parse function in tool/trace/record_parser.cpp (docs/ARCHITECTURE.md).
//
// Compatibility: bump kTraceVersion whenever a record's layout or meaning changes; the reader
// refuses versions it does not know. New record types may be added without a bump: readers skip
// types they do not know.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memory_sources.h"
#include "trace_device_heap_records.h"
#include "trace_framing.h"
#include "trace_launch_records.h"
#include "trace_memory_records.h"

namespace cuaudit::trace {
// Followed by the command line: argv strings, each NUL-terminated, cmdline_bytes in total.
struct ProcessInfoRecord {
  RecordHeader header;
  uint64_t pid;
  uint64_t parent_pid;
  uint64_t start_realtime_ns;   // CLOCK_REALTIME at initialization
  uint64_t start_monotonic_ns;  // CLOCK_MONOTONIC at the same moment: event times are monotonic
  uint32_t cmdline_bytes;
  uint32_t flush_interval_ms;  // at most this much is lost when the process is killed outright
};

// Followed by path_bytes of the file's path (no NUL).
struct ModuleRecord {
  RecordHeader header;
  uint64_t load_bias;  // runtime address = file virtual address + load_bias
  uint64_t start;      // lowest mapped address of its PT_LOAD segments
  uint64_t end;        // one past the highest
  uint8_t build_id[kMaxBuildIdBytes];
  uint16_t build_id_bytes;
  uint16_t path_bytes;
  uint32_t reserved;
};

// Followed by `depth` uint64_t return addresses, innermost first.
struct StackRecord {
  RecordHeader header;
  uint64_t id;  // content hash of the frames; the same stack always gets the same id
  uint32_t depth;
  uint32_t reserved;
};

// An allocation (AllocRecord) or a release (FreeRecord) by one tracked API call.
struct ApiEventRecord {
  RecordHeader header;
  uint64_t seq;       // alloc: taken after the call returned; free: taken before it started
  uint64_t time_ns;   // CLOCK_MONOTONIC
  uint64_t key;       // pointer or handle (see KeySpace)
  uint64_t bytes;     // size of the allocation, or of the range a range-release names
  uint64_t stack_id;  // kNoStack when no stack could be captured
  uint32_t tid;
  uint32_t context_uid;
  int32_t device;  // ordinal, kHostDevice or kUnknownDevice
  int32_t result;  // cudaError_t or CUresult the call returned to the program
  uint16_t api;    // cuaudit::Api
  uint16_t reserved16;
  uint32_t call_ns;  // time spent inside the call (ENTER to EXIT), saturated; 0: not measured
};
struct AllocRecord : ApiEventRecord {};
struct FreeRecord : ApiEventRecord {};

// An allocation or release, said as what changed since the thread's previous one (version 3 on):
// varints follow. Encoded and decoded only by compact_event.h, which describes the layout.
struct CompactEventRecord {
  RecordHeader header;  // header.reserved: api | flags << 16
};

// A runtime API call that is not an allocation or release, identified by its CUPTI callback id.
struct CallRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t stack_id;
  uint32_t tid;
  int32_t result;
  uint32_t cbid;
  uint32_t domain;  // CUpti_CallbackDomain
};
struct FailedCallRecord : CallRecord {};  // a runtime call that failed (not an allocation or release)
struct LastErrorRecord : CallRecord {};   // cudaGetLastError / cudaPeekAtLastError returned an error
struct CallSiteRecord : CallRecord {};    // a successful runtime call (--check-api-results only)

// Follows the FailedCall record of a copy or memset: its destination and source (or set) pointers.
struct CallPointersRecord {
  RecordHeader header;
  uint64_t seq;  // the failed call's
  uint64_t pointers[2];
};

// Device memory in use as the driver sees it (cuMemGetInfo): the timeline's raw data.
// Kernel launches are counted per thread and added to the process's count every kLaunchCountBatch
// launches (one shared atomic per batch, not per launch): a count in a record is a multiple of it,
// up to that many launches per thread behind. Work shorter than a batch cannot be told apart.
inline constexpr uint64_t kLaunchCountBatch = 64;

struct MemorySampleRecord {
  RecordHeader header;
  uint64_t seq;      // orders the sample among the allocations and releases
  uint64_t time_ns;  // CLOCK_MONOTONIC
  uint64_t free_bytes;
  uint64_t total_bytes;
  int32_t device;
  uint32_t reserved;
  uint64_t launches;  // kernel launches so far (a clock of the program's work); absent in 48-byte records
};

// Followed by `depth` PythonFrame entries (innermost first), then for each frame its file name and
// its function's qualified name, file_bytes and function_bytes long, no NULs.
struct PythonStackRecord {
  RecordHeader header;
  uint64_t id;  // hash of the frames; the same Python stack always gets the same id in one process
  uint32_t depth;
  uint32_t reserved;
};

struct PythonFrame {
  uint32_t line;
  uint16_t file_bytes;
  uint16_t function_bytes;
};
static_assert(sizeof(PythonFrame) == 8);

inline constexpr size_t kMaxPythonDepth = 48;
inline constexpr size_t kMaxPythonName = 240;

// Follows an allocation made while a Python thread held the GIL.
struct AllocPythonRecord {
  RecordHeader header;
  uint64_t seq;  // the allocation's
  uint64_t python_stack_id;
  uint64_t launches;  // kernel launches before it (0 when launches are not checked)
};

struct ContextRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint32_t context_uid;
  int32_t device;
};
struct ContextCreatedRecord : ContextRecord {};
struct ContextDestroyedRecord : ContextRecord {};

enum class NoticeCode : uint32_t {
  SubscribeFailed = 1,  // text: why; cuaudit saw nothing of this process
  DroppedEvents = 2,    // text: how many and why
  InitFailed = 3,
  UnifiedMemoryUnavailable = 4,  // text: why CUPTI gives no unified-memory records here
  DeviceHeapMode = 5,            // --device-heap: text says what this mode does not see
};

// Followed by text_bytes of text (no NUL).
struct NoticeRecord {
  RecordHeader header;
  uint32_t code;
  uint32_t text_bytes;
};

struct SignalRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  int32_t signal;
  uint32_t tid;
};

enum class ExitHow : uint32_t { Exit = 1, UnderscoreExit = 2, QuickExit = 3 };

// The C function behind an ExitHow ("_exit"): what the report says the program called.
const char* exit_function_name(ExitHow how) noexcept;

struct ExitCallRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  int32_t status;
  uint32_t how;  // ExitHow
};

struct ProcessEndRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
};

// Once exit processing began (and while a fatal signal is handled), every chunk the writer writes
// is followed, in the same write, by a chunk holding only this record: the file of a process that
// reached its end then ends with one, and a file cut after its end record does not (the static
// destructors' releases after it would be lost without a word). Version 6 on.
struct TraceClosedRecord {
  RecordHeader header;
};

// What a device's memory looked like beyond cuMemGetInfo: the stream-ordered pool of the device
// (reserved versus used, with high-water marks) and, at a failed allocation, the memory other
// processes hold on it (NVML). Written at failed allocations, and with the memory samples once
// the program uses stream-ordered allocations.
struct DeviceStateRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  int32_t device;
  uint32_t flags;                  // DeviceStateFlags
  uint64_t pool_reserved;          // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT of the device's current pool
  uint64_t pool_used;              // CU_MEMPOOL_ATTR_USED_MEM_CURRENT
  uint64_t pool_reserved_high;     // CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
  uint64_t pool_used_high;         // CU_MEMPOOL_ATTR_USED_MEM_HIGH
  uint64_t other_processes_bytes;  // NVML: memory of the other processes on the device
};

// A device the process has a context on, once: its name and memory, so that reports name devices.
// Followed by name_bytes of its name (cuDeviceGetName), no NUL.
struct DeviceInfoRecord {
  RecordHeader header;
  int32_t device;
  uint32_t name_bytes;
  uint64_t total_bytes;  // cuDeviceTotalMem
  uint64_t reserved;
};

enum DeviceStateFlags : uint32_t {
  kStateAtFailedAllocation = 1,  // taken right after an allocation failed
  kStateHasPool = 2,             // the pool fields are valid
  kStateHasOtherProcesses = 4,   // NVML answered: other_processes_bytes is valid
};

constexpr size_t padded_record_size(size_t bytes) { return (bytes + 7) & ~size_t{7}; }

// Every record type, from the one list: its number in RecordHeader::type and its struct.
enum class RecordType : uint16_t {
#define CUAUDIT_RECORD(type, number, Struct, bytes) type = number,
#include "trace_records.inc"
#undef CUAUDIT_RECORD
};

// Whether the record at `record` (a header's bytes at least) is the writer's closing mark.
inline bool is_closing_mark(const void* record) {
  RecordHeader h;
  __builtin_memcpy(&h, record, sizeof h);
  return h.type == static_cast<uint16_t>(RecordType::TraceClosed);
}

// The record type a struct is written as: record_type_v<AllocRecord> == RecordType::Alloc.
template <typename Record>
struct RecordTypeOf;
#define CUAUDIT_RECORD(type, number, Struct, bytes)                                      \
  template <>                                                                            \
  struct RecordTypeOf<Struct> {                                                          \
    static constexpr RecordType value = RecordType::type;                                \
  };                                                                                     \
  static_assert(sizeof(Struct) == (bytes), #Struct " changed size: bump kTraceVersion"); \
  static_assert(offsetof(Struct, header) == 0, #Struct " must start with its RecordHeader");
#include "trace_records.inc"
#undef CUAUDIT_RECORD
template <typename Record>
inline constexpr RecordType record_type_v = RecordTypeOf<Record>::value;

// The smallest record of a type a reader accepts: its struct, except where an older writer wrote
// a shorter one (the reader zero-fills the rest).
template <typename Record>
inline constexpr size_t kMinRecordBytes = sizeof(Record);
template <>
inline constexpr size_t kMinRecordBytes<MemorySampleRecord> = offsetof(MemorySampleRecord, launches);

// The header a writer puts on a record of `bytes` in all (fixed part and tail).
template <typename Record>
constexpr RecordHeader header_for(size_t bytes) {
  return RecordHeader{static_cast<uint16_t>(record_type_v<Record>), static_cast<uint16_t>(padded_record_size(bytes)),
                      0};
}

}  // namespace cuaudit::trace
