// The trace's records of memory that is not one CUDA call's (trace_format.h): graph memory
// nodes and graph changes, memory shared between processes, and pools with their blocks and
// segments (memory_sources.inc says who hands them out).
#pragma once

#include <cstdint>

#include "memory_sources.h"
#include "trace_framing.h"

namespace cuaudit::trace {

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

// What CUDA's unified memory did to a managed range (CUPTI's unified-memory counters): bytes moved
// each way, page faults, thrashing and throttling. Written from CUPTI's activity buffers, after
// the fact and out of sequence: `start_ns` (the injection's monotonic clock) places it. Version 5 on.
enum class MigrationKind : uint8_t {
  HostToDevice = 1,    // value: bytes
  DeviceToHost = 2,    // value: bytes
  CpuPageFault = 3,    // value: the faulting instruction's address
  GpuPageFault = 4,    // value: fault groups for the page
  Thrashing = 5,       // value: bytes of the range
  Throttling = 6,      // value: 0
  RemoteMap = 7,       // value: bytes mapped remotely instead of migrated
  DeviceToDevice = 8,  // value: bytes
};
// Why the driver moved pages (CUPTI's migration cause, in the trace's words).
enum class MigrationCause : uint8_t {
  Unknown = 0,
  User = 1,            // the program asked: cudaMemPrefetchAsync
  Coherence = 2,       // a page fault: the processor touching the page needed it
  Prefetch = 3,        // the driver's own speculative prefetch
  Eviction = 4,        // a device ran out of memory and evicted pages
  AccessCounters = 5,  // the hardware's access counters saw remote use
};
struct ManagedMigrationRecord {
  RecordHeader header;
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t address;
  uint64_t value;
  uint32_t src_id;  // device ordinal, or CUPTI's id for the host
  uint32_t dst_id;
  uint8_t kind;   // MigrationKind
  uint8_t cause;  // HostToDevice, DeviceToHost: MigrationCause (0 in traces before it was recorded)
  uint8_t reserved[6];
};

// A kernel's run on a GPU (CUPTI's concurrent-kernel activity), recorded only once the program has
// made a managed allocation, so the tool can name the kernels whose page faults pulled managed
// memory to the device. On the trace's clock, like ManagedMigrationRecord. Version 5 on.
struct KernelSpanRecord {
  RecordHeader header;
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t kernel_id;  // a Kernel record names it
  uint32_t device;     // ordinal
  uint32_t stream;     // CUPTI's stream id
  uint32_t reserved;
};

// Watch mode: allocations' host stacks are a sample (injection/stack_sampling.h). Once per trace,
// after ProcessInfo; a trace without it has every event's stack. An allocation below exact_bytes
// gets its stack with probability 1 - exp(-bytes / mean_bytes) (a Poisson process over the bytes
// allocated, as tcmalloc and Go sample), so the tool weighs each sampled one by the inverse; one
// at or above exact_bytes always gets it, and so does every failed call. A release has a stack
// only when it failed. Events without a stack carry kNoStack.
struct StackSamplingRecord {
  RecordHeader header;
  uint64_t mean_bytes;   // mean bytes allocated between two sampled stacks (> 0)
  uint64_t exact_bytes;  // allocations of this size or more always have their stack
  uint64_t reserved;
};

// First record of compacted-<pid>.cutrace, the part of a long run's trace the launcher compacted
// (tool/compaction/): that file holds what the trace said up to `cut` (its header and every record
// but the allocations and releases that paired up and most memory samples), and
// trace-<pid>.cutrace goes on from byte `cut`. Its counts take in every compaction so far. Written
// by the tool only, never by the injection.
struct CompactionRecord {
  RecordHeader header;
  uint64_t cut;             // where trace-<pid>.cutrace goes on (a chunk's start)
  uint64_t compactions;     // how many compactions made this file
  uint64_t allocations;     // successful allocations left out: each with its release, both seen
  uint64_t releases;        // the releases that released them
  uint64_t samples;         // memory samples and device states left out (neighbours kept)
  uint64_t damaged_chunks;  // chunks that failed their checksum, not carried over
  uint64_t last_time_ns;    // the last event compacted, on the trace's clock
};

}  // namespace cuaudit::trace
