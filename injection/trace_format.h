// The cuaudit trace file: the one contract between the injection (writer) and the tool (reader).
//
// One file per process, `trace-<pid>.cutrace`, made of a FileHeader followed by chunks. Each thread
// fills its own buffer and appends it as one chunk with a single write(2) on an O_APPEND descriptor,
// so chunks of different threads never interleave and a crash loses at most the unwritten buffers.
// A chunk is a ChunkHeader followed by records; each record starts with a RecordHeader whose size
// covers the whole record (padded to 8 bytes). Events carry a process-wide sequence number: the
// reader merges the chunks of all threads by it.
//
// Compatibility: bump kTraceVersion whenever a record's layout or meaning changes; the reader
// refuses versions it does not know. New record types may be added without a bump: readers skip
// types they do not know.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit::trace {

inline constexpr char kFileMagic[8] = {'C', 'U', 'A', 'U', 'D', 'T', 'R', 'C'};
inline constexpr uint32_t kTraceVersion = 1;
inline constexpr uint32_t kChunkMagic = 0x4b4e4843;  // "CHNK"
inline constexpr size_t kMaxStackDepth = 64;
inline constexpr size_t kMaxBuildIdBytes = 32;
inline constexpr size_t kMaxRecordBytes = 0xfff8;  // RecordHeader::size is 16 bits

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // sizeof(FileHeader) of the writer
  uint64_t pid;
};
static_assert(sizeof(FileHeader) == 24);

struct ChunkHeader {
  uint32_t magic;
  uint32_t payload_bytes;
  uint32_t tid;
  uint32_t reserved;
};
static_assert(sizeof(ChunkHeader) == 16);

enum class RecordType : uint16_t {
  ProcessInfo = 1,  // once, first record of the file
  Module = 2,       // a loaded ELF object: where it is and which file it came from
  Stack = 3,        // a distinct call stack, referred to by id
  Alloc = 4,        // ApiEventRecord
  Free = 5,         // ApiEventRecord
  ContextCreated = 6,
  ContextDestroyed = 7,
  Notice = 8,       // something the injection wants the user to know (could not subscribe, ...)
  ProcessEnd = 9,   // the process reached exit processing; absent when it died abruptly
  FailedCall = 10,  // CallRecord: a runtime call that failed (not an allocation or release)
  LastError = 11,   // CallRecord: cudaGetLastError / cudaPeekAtLastError returned an error
  CallSite = 12,    // CallRecord: a successful runtime call (--check-api-results only)
  CallbackName = 13,  // the name of a callback id, written once before its first use
  Signal = 14,      // SignalRecord: a fatal signal reached the process
  ExitCall = 15,    // ExitCallRecord: the program called exit, _exit, _Exit or quick_exit
  CallPointers = 16,  // CallPointersRecord: the pointers a failed copy or memset was given
  MemorySample = 17,  // MemorySampleRecord: what cuMemGetInfo said about one device
  Kernel = 18,        // KernelRecord: a kernel's id and mangled name, before its first launch fact
  LaunchParam = 19,   // LaunchParamRecord: a kernel parameter that failed a launch check
  PythonStack = 20,   // PythonStackRecord: a distinct Python call stack, referred to by id
  AllocPython = 21,   // AllocPythonRecord: the Python stack of the allocation with that seq
};

struct RecordHeader {
  uint16_t type;
  uint16_t size;  // bytes, header included, multiple of 8
  uint32_t reserved;
};
static_assert(sizeof(RecordHeader) == 8);

// Followed by the command line: argv strings, each NUL-terminated, cmdline_bytes in total.
struct ProcessInfoRecord {
  RecordHeader header;
  uint64_t pid;
  uint64_t parent_pid;
  uint64_t start_realtime_ns;   // CLOCK_REALTIME at initialization
  uint64_t start_monotonic_ns;  // CLOCK_MONOTONIC at the same moment: event times are monotonic
  uint32_t cmdline_bytes;
  uint32_t flush_interval_ms;   // at most this much is lost when the process is killed outright
};
static_assert(sizeof(ProcessInfoRecord) == 48);

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
static_assert(sizeof(ModuleRecord) == 72);

// Followed by `depth` uint64_t return addresses, innermost first.
struct StackRecord {
  RecordHeader header;
  uint64_t id;  // content hash of the frames; the same stack always gets the same id
  uint32_t depth;
  uint32_t reserved;
};
static_assert(sizeof(StackRecord) == 24);

inline constexpr uint64_t kNoStack = 0;
inline constexpr int32_t kHostDevice = -1;
inline constexpr int32_t kUnknownDevice = -2;

// An allocation (RecordType::Alloc) or a release (RecordType::Free) by one tracked API call.
struct ApiEventRecord {
  RecordHeader header;
  uint64_t seq;       // alloc: taken after the call returned; free: taken before it started
  uint64_t time_ns;   // CLOCK_MONOTONIC
  uint64_t key;       // pointer or handle (see KeySpace)
  uint64_t bytes;     // size of the allocation, or of the range a range-release names
  uint64_t stack_id;  // kNoStack when no stack could be captured
  uint32_t tid;
  uint32_t context_uid;
  int32_t device;     // ordinal, kHostDevice or kUnknownDevice
  int32_t result;     // cudaError_t or CUresult the call returned to the program
  uint16_t api;       // cuaudit::Api
  uint16_t reserved16;
  uint32_t reserved32;
};
static_assert(sizeof(ApiEventRecord) == 72);

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
static_assert(sizeof(CallRecord) == 48);

// Follows the FailedCall record of a copy or memset: its destination and source (or set) pointers.
struct CallPointersRecord {
  RecordHeader header;
  uint64_t seq;  // the failed call's
  uint64_t pointers[2];
};
static_assert(sizeof(CallPointersRecord) == 32);

// Device memory in use as the driver sees it (cuMemGetInfo): the timeline's raw data.
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
static_assert(sizeof(MemorySampleRecord) == 56);

// Followed by `depth` PythonFrame entries (innermost first), then for each frame its file name and
// its function's qualified name, file_bytes and function_bytes long, no NULs.
struct PythonStackRecord {
  RecordHeader header;
  uint64_t id;  // hash of the frames; the same Python stack always gets the same id in one process
  uint32_t depth;
  uint32_t reserved;
};
static_assert(sizeof(PythonStackRecord) == 24);

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
static_assert(sizeof(AllocPythonRecord) == 32);

// Followed by name_bytes of the kernel's name as the driver gives it (mangled for C++ kernels).
struct KernelRecord {
  RecordHeader header;
  uint32_t kernel_id;   // this process's number for the kernel, from 1
  uint32_t name_bytes;
};
static_assert(sizeof(KernelRecord) == 16);

// How a kernel's parameters reached CUDA (names in the tool's launch_findings).
enum class LaunchPath : uint8_t {
  cudaLaunchKernel = 1,
  cudaLaunchKernelExC = 2,
  cudaLaunchCooperativeKernel = 3,
  cuLaunchKernel = 4,
  cuLaunchKernelEx = 5,
  cuLaunchCooperativeKernel = 6,
  cuGraphAddKernelNode = 7,  // a kernel node added to a graph, by the driver API or a call we do not name
  cudaGraphKernelNodeSetParams = 8,
  cudaGraphExecKernelNodeSetParams = 9,
  cuGraphKernelNodeSetParams = 10,
  cuGraphExecKernelNodeSetParams = 11,
  cudaGraphAddKernelNode = 12,
  cudaGraphAddNode = 13,
};

enum class LaunchProblem : uint8_t {
  Misaligned = 1,      // value % alignment != 0
  NotAccessible = 2,   // the driver knows no device-accessible memory at the value (freed, pageable, garbage)
};

// One parameter of one launch that failed a check made in the target. The tool judges what an
// inaccessible value is (freed memory, pageable host memory, or nothing it can tell).
struct LaunchParamRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t stack_id;
  uint64_t value;        // the pointer as passed
  uint32_t tid;
  uint32_t kernel_id;
  uint32_t alignment;    // required by the parameter's type; 0: unknown (untyped kernel, unknown type)
  uint16_t param_index;
  uint8_t problem;       // LaunchProblem
  uint8_t path;          // LaunchPath
  int32_t driver_result; // NotAccessible: what cuPointerGetAttributes returned
  uint8_t memory_type;   // NotAccessible: CU_POINTER_ATTRIBUTE_MEMORY_TYPE (0: none)
  uint8_t host_readable; // NotAccessible: 1 when the process can read the address (host memory)
  uint16_t reserved16;
};
static_assert(sizeof(LaunchParamRecord) == 64);

// Followed by name_bytes of the callback's name as CUPTI gives it ("cudaMemcpy_v3020"), no NUL.
struct CallbackNameRecord {
  RecordHeader header;
  uint32_t domain;
  uint32_t cbid;
  uint32_t name_bytes;
  uint32_t reserved;
};
static_assert(sizeof(CallbackNameRecord) == 24);

struct ContextRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint32_t context_uid;
  int32_t device;
};
static_assert(sizeof(ContextRecord) == 32);

enum class NoticeCode : uint32_t {
  SubscribeFailed = 1,     // text: why; cuaudit saw nothing of this process
  DroppedEvents = 2,       // text: how many and why
  InitFailed = 3,
};

// Followed by text_bytes of text (no NUL).
struct NoticeRecord {
  RecordHeader header;
  uint32_t code;
  uint32_t text_bytes;
};
static_assert(sizeof(NoticeRecord) == 16);

struct SignalRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  int32_t signal;
  uint32_t tid;
};
static_assert(sizeof(SignalRecord) == 32);

enum class ExitHow : uint32_t { Exit = 1, UnderscoreExit = 2, QuickExit = 3 };

struct ExitCallRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  int32_t status;
  uint32_t how;  // ExitHow
};
static_assert(sizeof(ExitCallRecord) == 32);

struct ProcessEndRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
};
static_assert(sizeof(ProcessEndRecord) == 24);

constexpr size_t padded_record_size(size_t bytes) { return (bytes + 7) & ~size_t{7}; }

}  // namespace cuaudit::trace
