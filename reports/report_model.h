// The one report model every output format renders. It knows nothing of CUPTI or traces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "boxed.h"

namespace cuaudit::report {

inline constexpr const char* kSchema = "cuaudit.report.v1";

struct Frame {
  uint64_t pc = 0;
  std::string function;  // demangled; empty when unknown
  std::string mangled;   // the linkage name when it differs (C++), for --demangle no; else empty
  std::string file;      // empty when unknown
  int line = 0;          // 0 when unknown
  std::string module;
  // The return address's offset in `module` (0: unknown): stable from run to run, it tells two
  // frames without symbols apart (a stripped library, one absent where the report is made).
  uint64_t module_offset = 0;
};

enum class Severity { Error, Warning, Info };
const char* severity_name(Severity s);
std::optional<Severity> severity_from_name(std::string_view name);

// What a finding is about (finding_kinds.inc).
enum class FindingKind : uint8_t {
#define CUAUDIT_FINDING(id, key, sarif_name, description, severity, suppressible, help) id,
#include "finding_kinds.inc"
#undef CUAUDIT_FINDING
};

struct FindingKindInfo {
  FindingKind kind;
  const char* key;          // JSON `kind`, suppression rules, JUnit test case: "leak"
  const char* sarif_name;   // SARIF rule name: "CudaMemoryLeak"
  const char* description;  // one line, for SARIF rules and docs
  Severity severity;        // the usual severity (a finding may say otherwise)
  bool suppressible;        // KIND:PATTERN rules may name it
  const char* help;         // what to do about it, for SARIF rules
};

inline constexpr FindingKindInfo kFindingKinds[] = {
#define CUAUDIT_FINDING(id, key, sarif_name, description, severity, suppressible, help) \
  {FindingKind::id, key, sarif_name, description, Severity::severity, suppressible, help},
#include "finding_kinds.inc"
#undef CUAUDIT_FINDING
};

inline const FindingKindInfo& finding_kind_info(FindingKind k) { return kFindingKinds[static_cast<size_t>(k)]; }
inline const char* finding_kind_key(FindingKind k) { return finding_kind_info(k).key; }
std::optional<FindingKind> finding_kind_from_key(std::string_view key);

// What another stack of a finding shows.
enum class RelatedRole : uint8_t {
  Allocation,    // where the memory came from
  FirstRelease,  // double frees: the release that already released it
  Release,       // stale launch parameters: where the memory was freed
  Python,        // the Python stack of an allocation
  Holder,        // out of memory: a site that held memory at that moment
};
const char* related_role_key(RelatedRole r);  // "allocation", "first_release", "release", "python"
std::optional<RelatedRole> related_role_from_key(std::string_view key);

// With --baseline: whether the baseline run had the finding already.
enum class BaselineStatus : uint8_t { None, New, StillPresent };
const char* baseline_status_key(BaselineStatus b);  // null, "new", "still_present"

// Another stack that explains a finding: where the memory was allocated, where it was first
// released.
struct RelatedStack {
  RelatedRole role = RelatedRole::Allocation;
  std::string api;
  std::string title;  // "allocated by cudaMallocHost at:"
  std::vector<Frame> stack;
  uint64_t omitted_frames = 0;  // frames cut by --num-callers, as the finding's own
};

// The kernel parameter a launch finding is about.
struct KernelParameter {
  std::string kernel;  // demangled when it is a C++ name: "fill<int4>(int4*, int)"
  int index = 0;
  std::string type;                // as declared ("int4*"); empty for extern "C" kernels
  uint32_t alignment = 0;          // what the type (or the kernel's code) requires; 0 when unknown
  std::optional<uint64_t> offset;  // of the value inside the allocation it points into
  uint32_t member_offset = 0;      // the pointer's place inside a by-value struct parameter (0: the parameter)
  // What requires `alignment`: "type" (the kernel's name), "code" (its machine code), "debug_info"
  // (the pointee's declared alignment); empty when there is no alignment.
  std::string alignment_from;
};

// The device at the moment an allocation failed for lack of memory.
struct OutOfMemoryState {
  uint64_t requested = 0;                                  // bytes the failed call asked for
  std::optional<uint64_t> device_total, device_free;       // cuMemGetInfo then (none for host memory)
  uint64_t program_held = 0;                               // the program's tracked allocations on the device then
  std::vector<std::pair<std::string, uint64_t>> families;  // `program_held` by allocation family
  std::optional<uint64_t> pool_reserved, pool_used;        // the device's stream-ordered pool
  std::optional<uint64_t> other_processes;                 // memory of other processes (NVML); none: could not be known
  // A framework allocator's own statistics then, where it gives them (XLA's): the most it may
  // hold, what its blocks held, its largest free block.
  std::optional<uint64_t> allocator_limit, allocator_in_use, allocator_largest_free;
  std::string verdict;  // one line: what filled the device
};

// A site that allocates and frees again and again.
struct ChurnStats {
  uint64_t pairs = 0;               // allocations of the site released during the run
  uint64_t median_lifetime_ns = 0;  // from allocation to release
  uint64_t call_ns = 0;             // time inside its allocation and release calls
  double run_share = 0;             // call_ns / the process's run time
};

// A site whose live memory kept rising (native growth): how fast, between when and when.
struct GrowthStats {
  double bytes_per_hour = 0;  // the slope over the second half of the run
  double start = 0, end = 0;  // seconds since the process started
  uint64_t start_bytes = 0, end_bytes = 0;
  std::string site;  // the site's short name as its live series has it (site_labels.h); empty: the stack's
};

// A pool's segments at one moment, each a bar of its blocks by allocation site (the HTML report's
// segment view, as PyTorch's memory_viz draws segments): which long-lived blocks pin the holes.
struct PictureSite {
  std::string api;
  uint64_t bytes = 0, count = 0;  // of its blocks in the picture
  std::optional<Frame> at;        // its first frame in the program (a Python line when it has one)
};
struct BlockSpan {
  uint64_t offset = 0, bytes = 0;  // from the segment's start; blocks of one site closer than 512 bytes are one span
  int site = -1;                   // into PoolPicture::sites; -1: the other sites
};
struct SegmentPicture {
  uint64_t bytes = 0;
  std::vector<BlockSpan> blocks;  // in address order; what lies between them is free
};
struct PoolPicture {
  std::vector<PictureSite> sites;  // the sites holding the most, biggest first (up to 8)
  std::vector<SegmentPicture> segments;
  bool truncated = false;  // more segments or spans than a picture keeps (64 segments, 512 spans each)
};

// A pool cut into holes (fragmentation): its worst moment, either a request that did not fit in
// its free memory although enough was free (the pool took more memory instead: a miss), or a
// long stretch of high fragmentation while the pool was at least half full.
struct FragmentationStats {
  std::string pool;                              // as reports name it
  std::string trigger = "miss";                  // "miss" or "stretch"
  double at = 0;                                 // seconds since the process started: the worst moment
  uint64_t requested = 0;                        // a miss: the request that did not fit then
  uint64_t reserved = 0, used = 0;               // the pool's segments and handed-out blocks then
  uint64_t free = 0, largest_free = 0;           // its free bytes in holes and largest hole then
  double ratio = 0;                              // the seeds' 1 - largest free / free
  uint64_t grew_by = 0;                          // a miss: the segment it took instead
  uint64_t misses = 0;                           // requests that did not fit over the run
  std::vector<uint64_t> request_sizes;           // the distinct sizes that did not fit, largest first (up to 8)
  double stretch_from = 0, stretch_seconds = 0;  // a stretch: when it began and how long it lasted
  PoolPicture picture;                           // the pool at the worst moment
};

struct Finding {
  FindingKind kind = FindingKind::Leak;
  Severity severity = Severity::Error;
  std::string api;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t pid = 0;
  std::optional<int> device;        // none for host memory or when allocations span devices
  std::string headline;             // one line: what happened
  std::string message;              // the full sentence for JSON consumers
  std::vector<std::string> notes;   // extra lines shown under the stack
  std::optional<uint64_t> address;  // the pointer or handle the finding is about
  std::string result;               // what the offending call returned ("cudaErrorInvalidValue")
  bool suppressed = false;
  std::vector<Frame> stack;  // user frames first; CUDA-internal frames already dropped
  uint64_t omitted_frames = 0;
  std::vector<RelatedStack> related;
  BaselineStatus baseline = BaselineStatus::None;  // still-present ones do not gate
  Boxed<KernelParameter> parameter;                // launch parameter findings
  std::optional<double> at;  // seconds since its process started (out of memory: the moment, on the timeline)
  // Boxed (boxed.h): a finding has at most one kind's details, and held inline they were most of it.
  Boxed<OutOfMemoryState> out_of_memory;
  std::optional<ChurnStats> churn;
  Boxed<FragmentationStats> fragmentation;
  Boxed<GrowthStats> growth;
  // `cuaudit merge` only: the ranks (input reports) and pids the same finding came from.
  std::vector<int> ranks;
  std::vector<uint64_t> pids;
};

// A device a process used: its ordinal there and its name.
struct DeviceDescription {
  int ordinal = 0;
  std::string name;  // "NVIDIA H200"; empty when the trace does not say
  uint64_t total = 0;
};

struct Process {
  uint64_t pid = 0;
  uint64_t parent_pid = 0;
  std::vector<std::string> command;
  std::optional<int> exit_code;
  std::optional<std::string> signal;  // "SIGSEGV", ...
  bool tracked = true;
  std::vector<std::string> notes;  // what the user should know about this process
  uint64_t allocations = 0;
  uint64_t releases = 0;
  std::optional<int> rank;                 // `cuaudit merge`: which input report it came from
  std::vector<DeviceDescription> devices;  // the devices it had contexts on, by ordinal
  std::optional<double> seconds;           // from its start to the last thing cuaudit saw of it
};

struct Summary {
  uint64_t leaked_bytes = 0;
  uint64_t leaked_allocations = 0;
  uint64_t findings = 0;        // unsuppressed findings
  uint64_t error_findings = 0;  // unsuppressed findings of severity error (with a baseline: new ones)
};

// A finding kind this run could not have found, and why.
struct UncheckedKind {
  FindingKind kind;
  std::string reason;
};

// A suppression rule and what it silenced in this run.
struct SuppressionUse {
  std::string rule;  // "leak:CUDACachingAllocator"
  std::string file;
  int line = 0;
  uint64_t hits = 0;
  uint64_t bytes = 0;
};

// One timeline point: what the driver said was in use on a device, and what the program held.
struct TimelineSample {
  double t = 0;  // seconds since the process started
  uint64_t pid = 0;
  int device = 0;
  uint64_t used = 0;  // total - free, as cuMemGetInfo reported
  uint64_t free = 0;
  uint64_t tracked = 0;  // bytes the program's tracked allocations held on that device then
  std::vector<std::pair<std::string, uint64_t>> families;      // `tracked` by allocation family (non-zero ones)
  std::optional<uint64_t> pool_reserved, pool_used;            // the device's stream-ordered pool, once used
  std::optional<uint64_t> pool_reserved_high, pool_used_high;  // and its high-water marks
  // What a framework's caching allocator had handed out of its segments (PyTorch's allocated
  // bytes, beside the segments `tracked` counts as reserved); none when not known.
  std::optional<uint64_t> blocks;
};

// An allocation site holding memory at a peak.
struct PeakSite {
  std::string api;
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::vector<Frame> stack;
  std::string site;  // its short name (the user's line, the allocator, ...): site_labels.h
};

// The highest use of one device by one process, and the sites that held the most then.
struct DevicePeak {
  uint64_t pid = 0;
  int device = 0;
  double t = 0;
  uint64_t used = 0;
  uint64_t tracked = 0;
  std::vector<std::pair<std::string, uint64_t>> families;  // `tracked` by allocation family
  std::vector<PeakSite> sites;                             // biggest first
};

// Live memory of one device's biggest sites over the run (the stacked chart): each site's bytes at
// the end of each time bucket, and what all the other sites held together.
struct SeriesSite {
  std::string api;
  std::vector<uint64_t> bytes;  // one per bucket
  std::vector<Frame> stack;
  std::string site;    // its short name, as PeakSite's
  uint64_t count = 0;  // allocations live at the end (estimated when stacks were sampled)
};
struct SiteSeries {
  uint64_t pid = 0;
  int device = 0;
  std::vector<double> t;  // each bucket's end, seconds since the process started
  std::vector<SeriesSite> sites;
  std::vector<uint64_t> other;
  uint64_t other_count = 0;  // allocations the other sites hold at the end
  bool sampled = false;      // watch mode: the sites' figures are estimates from sampled stacks
};

// One pool's memory over the run (docs/FRAGMENTATION.md): a point at each memory sample at which
// its blocks or segments had changed since the last; columns of equal length.
struct PoolSeries {
  uint64_t pid = 0;
  std::string pool;       // as reports name it
  std::vector<double> t;  // seconds since the process started
  std::vector<uint64_t> reserved, used, free, largest_free;
  // Of `free`, the bytes in holes of 512 bytes or more (what a request could use; the smaller gaps
  // are a framework's rounding): the fragmentation ratio is 1 - largest_free / holes.
  std::vector<uint64_t> holes;
  // False where the pool tells no largest free block (the device heap): no fragmentation to chart.
  bool fragmentation_measured = true;
};

// Managed memory unified memory moved on one device over the run: the bytes migrated to the device
// and back to the host in each time bucket (columns of equal length).
struct MigrationSeries {
  uint64_t pid = 0;
  int device = 0;
  std::vector<double> t;  // each bucket's end, seconds since the process started
  std::vector<uint64_t> to_device, to_host;
};

struct Timeline {
  std::vector<TimelineSample> samples;  // every process, in time order per process
  std::vector<DevicePeak> peaks;
  std::vector<SiteSeries> site_series;
  std::vector<PoolSeries> pool_series;
  std::vector<MigrationSeries> migration_series;
};

// What --baseline found: only new findings gate.
struct BaselineResult {
  std::string file;
  uint64_t new_findings = 0;
  uint64_t still_present = 0;
  std::vector<std::string> fixed;  // one line per baseline finding that is gone
};

// One allocation's life, for --perfetto: from its allocation to its release, or to the end of
// the process when it was never released.
struct AllocationSpan {
  uint64_t pid = 0;
  int device = 0;
  std::string api;
  uint64_t bytes = 0;
  double begin = 0;           // seconds since the process started
  std::optional<double> end;  // none: never released
  std::string site;           // the first user frame: "app.cu:12", else the function
};

// One allocation site's memory over a run, for --pprof (what Go's heap profiles hold): every site,
// not only the biggest. A site is a stack (with the user's Python lines), an API and a device; a
// pool's blocks are at their own site, its cache ("reserved and not handed out") at one of its own.
struct ProfileSite {
  uint64_t pid = 0;
  int device = 0;  // -1: host memory (cudaMallocHost's)
  std::string api;
  std::vector<Frame> stack;  // the innermost frame first, as a finding's; empty for a pool's cache
  std::string site;          // a pool's cache: what it is; else empty (the stack says)
  uint64_t allocated_count = 0, allocated_bytes = 0;  // over the run
  uint64_t live_count = 0, live_bytes = 0;            // at the end (at exit, or as of a snapshot)
  uint64_t peak_count = 0, peak_bytes = 0;            // at its device's peak (0: no memory samples)
};

// --memory-viz: one process's device memory as PyTorch's memory snapshot describes a caching
// allocator's (torch.cuda.memory._snapshot()), for its memory visualizer: segments tiled by blocks
// at the end of the run, and each device's trace of what happened before.
struct VizBlock {
  uint64_t address = 0, size = 0;
  bool active = false;  // handed out to the program ("active_allocated"); else free in its segment
  uint32_t stack = 0;   // into MemoryViz::stacks (0: none recorded)
};
struct VizSegment {
  int device = 0;
  uint64_t address = 0, size = 0;
  bool pool = false;  // a pool's segment (PyTorch's, CuPy's...); else one plain allocation
  uint32_t stack = 0;
  std::vector<VizBlock> blocks;  // tiling the segment, in address order
};
enum class VizAction : uint8_t { SegmentAlloc, Alloc, FreeRequested, FreeCompleted, SegmentFree };
struct VizEntry {
  int device = 0;
  VizAction action = VizAction::Alloc;
  uint64_t address = 0, size = 0;
  uint64_t time_us = 0;  // since the process started
  uint32_t stack = 0;
};
struct MemoryViz {
  uint64_t pid = 0;
  std::vector<std::vector<Frame>> stacks;  // [0] is the empty stack; the profile's frames (profile_stacks.h)
  std::vector<VizSegment> segments;
  std::vector<VizEntry> entries;  // in time order; the oldest left out beyond the limit
  uint64_t entries_left_out = 0;
};

struct Report {
  std::string tool_version;
  std::vector<Process> processes;
  std::vector<Finding> findings;
  Summary summary;
  std::vector<std::string> notes;  // run-wide remarks (nothing tracked, damaged trace, ...)
  bool nothing_tracked = false;    // no process could be observed: never a clean result
  bool incomplete = false;         // something recorded could not be read (a damaged trace, ...): said in the notes
  std::vector<SuppressionUse> suppressions;  // every rule given, with its hits
  // Finding kinds this run could not have found, and why ("--leak-check no"): JUnit calls their
  // "no KIND" test cases skipped, not passed.
  std::vector<UncheckedKind> unchecked;
  std::optional<BaselineResult> baseline;
  Timeline timeline;                     // empty when the run recorded no memory samples
  std::vector<std::string> merged_from;  // `cuaudit merge`: the input reports, in rank order
  // The options in effect: the options file's words (.cuauditrc, its path), CUAUDIT_OPTIONS's,
  // then the command line's (without the program).
  std::string options_file;
  std::vector<std::string> options_from_file;
  std::vector<std::string> options_from_environment;
  std::vector<std::string> options_from_command_line;
  // Only when asked for (--perfetto): each allocation's life, up to a limit; the rest counted.
  std::vector<AllocationSpan> allocation_spans;
  uint64_t allocation_spans_left_out = 0;
  // Only when asked for (--pprof): every allocation site; estimates where stacks were sampled.
  std::vector<ProfileSite> profile_sites;
  bool profile_sites_sampled = false;
  // Only when asked for (--memory-viz): the first process with device memory.
  std::optional<MemoryViz> memory_viz;
};

// Memory sizes for people: "3.0 GiB", "540.8 MiB", "4.0 KiB", "100 B".
std::string human_bytes(uint64_t bytes);

// a + b, or the largest count when it would wrap: sums of byte counts from received reports (a
// finding of 2^63 bytes, crafted or damaged) stay the largest number, never a small one.
inline uint64_t saturating_add(uint64_t a, uint64_t b) {
  uint64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

// Memory the program never released: CUDA's allocations and kernels' device-heap blocks alike
// (the summary's leaked bytes and sites).
inline bool counts_as_leak(FindingKind kind) {
  return kind == FindingKind::Leak || kind == FindingKind::DeviceHeapLeak;
}

// Recomputes the summary from the findings (of one process, for summarize_process).
Summary summarize(const std::vector<Finding>& findings);
Summary summarize_process(const std::vector<Finding>& findings, uint64_t pid);

}  // namespace cuaudit::report
