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
// per struct. To add a record: define its struct here, add one line to trace_records.inc, write
// it in the injection and add its parse function in tool/trace/record_parser.cpp (docs/ARCHITECTURE.md).
//
// Compatibility: bump kTraceVersion whenever a record's layout or meaning changes; the reader
// refuses versions it does not know. New record types may be added without a bump: readers skip
// types they do not know.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memory_sources.h"

namespace cuaudit::trace {

inline constexpr char kFileMagic[8] = {'C', 'U', 'A', 'U', 'D', 'T', 'R', 'C'};
// Version 2: chunks carry a checksum of their payload. Version 3: allocations and releases are
// written as CompactEventRecords, relative to the thread's previous one. Version 4: a LaunchBitsRecord
// may carry a problem (a word of a by-value struct pointing to no memory the driver knows, or into
// host memory). Version 5: a pool's blocks are PoolBlockRecords (source, pool and operation said
// explicitly) and its memory PoolSegmentRecords; before, blocks were allocation and release records
// of pseudo-APIs whose context field carried the pool. Versions 1 to 4 are still read.
inline constexpr uint32_t kTraceVersion = 5;
inline constexpr uint32_t kOldestReadableVersion = 1;
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
  uint32_t checksum;  // chunk_checksum of the payload (version 2 on; 0 in version 1)
};

// Word-wise multiply-xor over `bytes`: cheap (about 5 us for 64 KiB), not cryptographic. Names a
// kernel-code file by its content (ModuleCodeRecord::hash) and checks chunks (chunk_checksum).
inline uint64_t content_hash64(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0x9e3779b97f4a7c15ull ^ bytes;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    __builtin_memcpy(&word, p + i, 8);
    h = (h ^ word) * 0x100000001b3ull;
    h ^= h >> 32;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

// What a chunk's header says of its payload, so that a flipped byte is a damaged chunk, not a
// silently different finding: cheap enough for every flush (a full 64 KiB buffer).
inline uint32_t chunk_checksum(const void* data, size_t bytes) {
  const uint64_t h = content_hash64(data, bytes);
  return static_cast<uint32_t>(h ^ (h >> 32));
}
static_assert(sizeof(ChunkHeader) == 16);

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

inline constexpr uint64_t kNoStack = 0;
inline constexpr int32_t kHostDevice = -1;
inline constexpr int32_t kUnknownDevice = -2;

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

// Followed by name_bytes of the kernel's name as the driver gives it (mangled for C++ kernels).
struct KernelRecord {
  RecordHeader header;
  uint32_t kernel_id;  // this process's number for the kernel, from 1
  uint32_t name_bytes;
};

// How a kernel's parameters reached CUDA: declared in launch_paths.inc with the names reports use.
enum class LaunchPath : uint8_t {
#define CUAUDIT_LAUNCH_PATH(id, number, name) id = number,
#include "launch_paths.inc"
#undef CUAUDIT_LAUNCH_PATH
};

// The name reports give a launch path ("cudaLaunchKernel", "a kernel node added to a graph");
// null for a number this build does not know.
const char* launch_path_name(uint8_t path) noexcept;

enum class LaunchProblem : uint8_t {
  Misaligned = 1,      // value % alignment != 0
  NotAccessible = 2,   // the driver knows no device-accessible memory at the value (freed, pageable, garbage)
  PeerNotEnabled = 3,  // memory of another device that the launching device was given no access to
  ReturnedToPool = 4,  // inside a block an NVTX-annotated pool took back (its memory is still the pool's)
  // A LaunchBits record (not a LaunchParam one) whose problem is 0: a pointer-like value not
  // 16-byte aligned, which the tool compares with what the kernel's code requires of it.
  LowBits = 5,
};

// One parameter of one launch that failed a check made in the target. The tool judges what an
// inaccessible value is (freed memory, pageable host memory, or nothing it can tell).
struct LaunchParamRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t stack_id;
  uint64_t value;  // the pointer as passed
  uint32_t tid;
  uint32_t kernel_id;
  uint32_t alignment;  // required by the parameter's type; 0: unknown (untyped kernel, unknown type)
  uint16_t param_index;
  uint8_t problem;        // LaunchProblem
  uint8_t path;           // LaunchPath
  int32_t driver_result;  // NotAccessible: what cuPointerGetAttributes returned
  uint8_t memory_type;    // NotAccessible: CU_POINTER_ATTRIBUTE_MEMORY_TYPE (0: none)
  uint8_t host_readable;  // NotAccessible: 1 when the process can read the address (host memory)
  int8_t pointer_device;  // PeerNotEnabled: the device the memory is on
  int8_t launch_device;   // PeerNotEnabled: the device the kernel runs on
};

// A word of a kernel's parameters where a pointer may be, whose value
// - problem 0: lies in the range of addresses CUDA handed out and is not 16-byte aligned, the
//   first time its kernel saw these low bits at this word from this launch stack (stacks are
//   walked for every such launch at first, then for a sample: launch_checker.cpp). Whether the
//   kernel needs it aligned is for the tool to judge, from the kernel's machine code
//   (ModuleCode); the target cannot tell a pointer from an integer, nor a float* from one the
//   kernel reads as float4; or
// - problem NotAccessible or ReturnedToPool (a word no typed check covers: a by-value struct's):
//   lies in that range and is no memory the driver knows, or in a block a pool took back; or,
//   outside that range, is host memory the process can read and the driver does not know
//   (host_readable). Sampled and kept once per launch site like the low bits. The word may be an
//   integer: the tool reports it only where the value lies in memory the program released, or in
//   host memory the kernel's code reads through.
struct LaunchBitsRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t stack_id;
  uint64_t value;  // the word as passed
  uint32_t tid;
  uint32_t kernel_id;
  uint32_t buffer_offset;  // where the word is in the kernel's parameter buffer
  uint16_t param_index;    // the parameter it belongs to
  uint16_t member_offset;  // where it is inside that parameter (0 for a pointer parameter)
  uint8_t path;            // LaunchPath
  uint8_t problem;         // 0 (low bits), or LaunchProblem::NotAccessible or ReturnedToPool (version 4 on)
  uint8_t memory_type;     // NotAccessible: CU_POINTER_ATTRIBUTE_MEMORY_TYPE (0: none)
  uint8_t host_readable;   // NotAccessible: 1 when the process can read the address (host memory)
  int32_t driver_result;   // NotAccessible: what cuPointerGetAttributes returned
};

// What became of the machine code of one module CUDA loaded (CUPTI's module-loaded callback).
enum class ModuleCodeStatus : uint32_t {
  Saved = 1,        // an ELF cubin, written as kernel-code/<hash>.cubin beside the trace (or already there)
  NotCode = 2,      // the driver handed over neither a cubin nor a fatbin
  OverLimit = 3,    // CUAUDIT_KERNEL_CODE_LIMIT_MB was reached: not written
  WriteFailed = 4,  // the file could not be written
  SavedFatbin = 5,  // a fat binary (cubins for several GPUs, maybe compressed): kernel-code/<hash>.fatbin
};
inline constexpr uint32_t kFatbinMagic = 0xba55ed50;  // the first word of a fat binary's header
struct ModuleCodeRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t hash;       // of the cubin's bytes: its file name, as 16 hex digits
  uint64_t bytes;      // the cubin's size
  uint32_t module_id;  // CUPTI's id of the module
  uint32_t status;     // ModuleCodeStatus
};

// Followed by name_bytes of the callback's name as CUPTI gives it ("cudaMemcpy_v3020"), no NUL.
struct CallbackNameRecord {
  RecordHeader header;
  uint32_t domain;
  uint32_t cbid;
  uint32_t name_bytes;
  uint32_t reserved;
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

// A memory node added to a graph (explicitly, or by capturing cudaMallocAsync/cudaFreeAsync): the
// allocation happens at each launch of the graph, at the address fixed here.
enum class GraphNodeKind : uint8_t { Alloc = 1, Free = 2 };
struct GraphMemNodeRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t stack_id;  // where the node was made
  uint64_t graph;     // CUgraph it belongs to
  uint64_t node;      // CUgraphNode (0 for a node made by stream capture)
  uint64_t dptr;      // the address it allocates or frees
  uint64_t bytes;     // Alloc: bytes allocated at each launch
  uint32_t tid;
  int32_t device;  // Alloc: where the memory lives
  uint16_t api;    // cuaudit::Api naming how it was made (cudaGraphAddMemAllocNode, cudaMallocAsync captured, ...)
  uint8_t kind;    // GraphNodeKind
  uint8_t reserved8;
  uint32_t reserved32;
};

enum class GraphChange : uint32_t {
  ExecCreated = 1,     // `exec` was instantiated from `graph` (its memory nodes as of now), with `flags`
  GraphCloned = 2,     // `graph` is a clone of `original`
  GraphDestroyed = 3,  // `graph` is gone (its handle may come back for another graph)
  ExecDestroyed = 4,   // `exec` is gone
};
struct GraphChangeRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t graph;
  uint64_t original;  // GraphCloned: the graph it was cloned from
  uint64_t exec;
  uint32_t change;  // GraphChange
  uint32_t reserved;
  uint64_t flags;  // ExecCreated: the instantiation flags (kGraphAutoFreeOnLaunch: free before relaunching)
};
inline constexpr uint64_t kGraphAutoFreeOnLaunch = 1;  // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH

struct GraphLaunchRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t exec;  // CUgraphExec
  uint32_t tid;
  int32_t result;  // what the launch returned (a failed launch allocates nothing)
};

// Memory crossing a process boundary: an IPC or pool export (the exporter's pointer), or the
// import that follows an Alloc record of cudaIpcOpenMemHandle/cudaMemPoolImportPointer (same seq).
// The handle's bytes are hashed: the tool pairs an import with its export across the run's traces.
enum class SharedRole : uint32_t { Export = 1, Import = 2 };
struct SharedMemoryRecord {
  RecordHeader header;
  uint64_t seq;      // Export: its own; Import: the Alloc record's
  uint64_t time_ns;  // CLOCK_MONOTONIC, comparable across the processes of one machine
  uint64_t pointer;  // Export: the exported allocation; Import: where it was mapped
  uint64_t handle_hash;
  uint32_t role;  // SharedRole
  uint32_t reserved;
};

// A pool whose blocks the trace records (memory_sources.inc: every source but CUDA's own calls).
// Written once per pool, before its first block or segment. Followed by name_bytes of its name, no NUL.
using PoolKind = MemorySource;  // the pool's source: NvtxHeap, CupyPool, TorchCaching
// Whether `kind` (a PoolRecord's) is a pool source this build knows.
inline bool is_known_pool_kind(uint32_t kind) { return is_pool_source(kind); }
struct PoolRecord {
  RecordHeader header;
  uint32_t pool;  // this process's number for it, from 1 (0: NVTX's process-wide heap)
  uint32_t kind;  // MemorySource
  uint64_t base;  // the range it hands blocks out of (0 and 0: not said)
  uint64_t bytes;
  uint64_t stack_id;  // where it was made; kNoStack when not known
  int32_t device;     // ordinal or kUnknownDevice
  uint32_t name_bytes;
};

// A block a pool handed out, resized or took back, or the end of all its blocks at once (version 5
// on). Which pool said so and what it did are fields of their own; the memory around the block is
// the pool's segments (PoolSegmentRecord), and the tool places a block in the segment holding it.
struct PoolBlockRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t key;       // the block's address (0 for ReleaseAll and Reset)
  uint64_t bytes;     // HandOut, Resize: its size
  uint64_t stack_id;  // kNoStack when no stack could be captured
  uint32_t tid;
  uint32_t pool;   // the pool (PoolRecord::pool); on TakeBack and Resize, 0 when the writer does not know it
  int32_t device;  // ordinal or kUnknownDevice
  uint8_t source;  // MemorySource of the pool
  uint8_t op;      // BlockOp
  uint16_t reserved;
};

// Memory a pool took to hand blocks out of (Mapped), or gave back (Unmapped): an NVTX heap's
// registered range, the cudaMalloc segments of a framework's allocator. Version 5 on.
enum class SegmentChange : uint8_t { Mapped = 1, Unmapped = 2 };
struct PoolSegmentRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t base;
  uint64_t bytes;
  uint64_t stack_id;
  uint32_t tid;
  uint32_t pool;
  int32_t device;
  uint8_t change;  // SegmentChange
  uint8_t reserved[3];
};

constexpr size_t padded_record_size(size_t bytes) { return (bytes + 7) & ~size_t{7}; }

// Every record type, from the one list: its number in RecordHeader::type and its struct.
enum class RecordType : uint16_t {
#define CUAUDIT_RECORD(type, number, Struct, bytes) type = number,
#include "trace_records.inc"
#undef CUAUDIT_RECORD
};

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
