#include "trace_reader.h"

#include "safe_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "compact_event.h"
#include "trace_format.h"

namespace cuaudit {
namespace {

using namespace cuaudit::trace;

template <typename T>
T load(const char* p) {
  T value;
  memcpy(&value, p, sizeof value);
  return value;
}

std::string hex_bytes(const uint8_t* p, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += fmt::format("{:02x}", p[i]);
  return out;
}

std::vector<std::string> split_cmdline(const char* p, size_t n) {
  std::vector<std::string> args;
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] == '\0') {
      args.emplace_back(p + start, i - start);
      start = i + 1;
    }
  }
  if (start < n) args.emplace_back(p + start, n - start);
  return args;
}

// The bytes after a record's fixed part: a path, a name, frames.
struct Tail {
  const char* data;
  size_t bytes;
};

// Builds a ProcessTrace from records, one parse function per record struct (trace_records.inc
// dispatches to them). Each returns false when the record is malformed (the rest of the chunk is
// then skipped).
class TraceBuilder {
 public:
  TraceBuilder(ProcessTrace& out, uint32_t version) : out_(out), version_(version) {}

  bool parse(const ProcessInfoRecord& r, Tail tail) {
    if (r.cmdline_bytes > tail.bytes) return false;
    out_.pid = r.pid;
    out_.parent_pid = r.parent_pid;
    out_.start_realtime_ns = r.start_realtime_ns;
    out_.start_monotonic_ns = r.start_monotonic_ns;
    out_.command = split_cmdline(tail.data, r.cmdline_bytes);
    out_.flush_interval_ms = r.flush_interval_ms;
    return true;
  }

  bool parse(const ModuleRecord& r, Tail tail) {
    if (r.path_bytes > tail.bytes || r.build_id_bytes > kMaxBuildIdBytes) return false;
    out_.modules.push_back(
        {r.load_bias, r.start, r.end, std::string(tail.data, r.path_bytes), hex_bytes(r.build_id, r.build_id_bytes)});
    return true;
  }

  bool parse(const StackRecord& r, Tail tail) {
    if (r.depth > kMaxStackDepth + 1 || r.depth * sizeof(uint64_t) > tail.bytes) return false;
    std::vector<uint64_t> frames(r.depth);
    if (r.depth) memcpy(frames.data(), tail.data, r.depth * sizeof(uint64_t));  // (found by fuzzing: null for 0)
    out_.stacks.emplace(r.id, std::move(frames));
    return true;
  }

  bool parse(const AllocRecord& r, Tail) { return add_memory_event(EventKind::Alloc, r); }
  bool parse(const FreeRecord& r, Tail) { return add_memory_event(EventKind::Free, r); }
  bool parse(const CompactEventRecord& r, Tail tail) {
    ApiEventRecord event;
    bool alloc = false;
    if (!decode_compact_event(compact_[chunk_tid_], r.header, tail.data, tail.bytes, chunk_tid_, event, alloc)) {
      ++undecodable_;  // relative to an event of a chunk that was lost: not a malformed chunk
      return true;
    }
    return add_memory_event(alloc ? EventKind::Alloc : EventKind::Free, event);
  }
  bool parse(const ContextCreatedRecord& r, Tail) { return add_context_change(EventKind::ContextCreated, r); }
  bool parse(const ContextDestroyedRecord& r, Tail) { return add_context_change(EventKind::ContextDestroyed, r); }

  bool parse(const NoticeRecord& r, Tail tail) {
    if (r.text_bytes > tail.bytes) return false;
    if (r.code == static_cast<uint32_t>(NoticeCode::DroppedEvents)) {  // damage, said once, as such
      out_.problems.push_back(std::string(tail.data, r.text_bytes) + "; the report misses them");
      return true;
    }
    out_.notices.emplace_back(tail.data, r.text_bytes);
    if (r.code == static_cast<uint32_t>(NoticeCode::SubscribeFailed)) out_.tracked = false;
    return true;
  }

  bool parse(const FailedCallRecord& r, Tail) { return add_runtime_call(EventKind::FailedCall, r); }
  bool parse(const LastErrorRecord& r, Tail) { return add_runtime_call(EventKind::LastError, r); }
  bool parse(const CallSiteRecord& r, Tail) { return add_runtime_call(EventKind::CallSite, r); }

  bool parse(const MemorySampleRecord& r, Tail) {
    out_.samples.push_back({r.seq, r.time_ns, r.device, r.free_bytes, r.total_bytes, r.launches});
    if (out_.samples.size() >= kMaxSamples) thin_samples();
    return true;
  }

  bool parse(const DeviceStateRecord& r, Tail) {
    DeviceState d;
    d.seq = r.seq;
    d.time_ns = r.time_ns;
    d.device = r.device;
    d.at_failed_allocation = r.flags & kStateAtFailedAllocation;
    if (r.flags & kStateHasPool) {
      d.pool_reserved = r.pool_reserved;
      d.pool_used = r.pool_used;
      d.pool_reserved_high = r.pool_reserved_high;
      d.pool_used_high = r.pool_used_high;
    }
    if (r.flags & kStateHasOtherProcesses) d.other_processes_bytes = r.other_processes_bytes;
    out_.device_states.push_back(d);
    return true;
  }

  bool parse(const DeviceInfoRecord& r, Tail tail) {
    if (r.name_bytes > tail.bytes) return false;
    out_.devices[r.device] = {std::string(tail.data, r.name_bytes), r.total_bytes};
    return true;
  }

  bool parse(const PoolRecord& r, Tail tail) {
    if (r.name_bytes > tail.bytes) return false;
    if (!is_known_pool_kind(r.kind)) return true;  // a kind of pool a newer writer knows
    out_.pools[r.pool] = {static_cast<MemorySource>(r.kind), std::string(tail.data, r.name_bytes), r.base, r.bytes,
                          r.stack_id, r.device};
    return true;
  }

  bool parse(const PoolBlockRecord& r, Tail) {
    const SourceInfo* source = source_info(r.source);
    const Api api = source && is_known_block_op(r.op) ? block_api(source->source, static_cast<BlockOp>(r.op)) : Api::Count;
    if (api == Api::Count) {  // a source or an operation a newer writer knows
      ++unknown_apis_;
      return true;
    }
    MemoryEvent m;
    m.seq = r.seq;
    m.time_ns = r.time_ns;
    m.stack_id = r.stack_id;
    m.tid = r.tid;
    m.api = api;
    m.key = r.key;
    m.bytes = r.bytes;
    m.pool = r.pool;
    m.device = r.device;
    add_event(api_info(api).role == ApiRole::Alloc ? EventKind::Alloc : EventKind::Free, r.seq, r.time_ns, r.stack_id,
              r.tid, m);
    return true;
  }

  bool parse(const PoolSegmentRecord& r, Tail) {
    const auto change = static_cast<SegmentChange>(r.change);
    if (change != SegmentChange::Mapped && change != SegmentChange::Unmapped) return true;  // a newer writer's
    add_event(EventKind::PoolSegment, r.seq, r.time_ns, r.stack_id, r.tid,
              PoolSegmentFact{r.pool, r.base, r.bytes, r.device, change == SegmentChange::Mapped});
    return true;
  }

  bool parse(const ModuleCodeRecord& r, Tail) {
    out_.module_code.push_back({r.hash, r.bytes, r.module_id, static_cast<trace::ModuleCodeStatus>(r.status)});
    return true;
  }

  bool parse(const LaunchBitsRecord& r, Tail) {
    // Before version 4 the problem byte was reserved (0): every record was about low bits. A
    // problem this reader does not know for a word is a newer writer's: skipped.
    const auto problem = static_cast<LaunchProblem>(r.problem);
    if (r.problem != 0 && problem != LaunchProblem::NotAccessible && problem != LaunchProblem::ReturnedToPool)
      return true;
    LaunchParamFact fact;
    fact.value = r.value;
    fact.kernel_id = r.kernel_id;
    fact.param_index = r.param_index;
    fact.member_offset = r.member_offset;
    fact.buffer_offset = r.buffer_offset;
    fact.word = true;
    fact.problem = r.problem == 0 ? LaunchProblem::LowBits : problem;
    fact.path = r.path;
    fact.driver_result = r.driver_result;
    fact.memory_type = r.memory_type;
    fact.host_readable = r.host_readable != 0;
    add_event(EventKind::LaunchParam, r.seq, r.time_ns, r.stack_id, r.tid, fact);
    return true;
  }

  bool parse(const KernelRecord& r, Tail tail) {
    if (r.name_bytes > tail.bytes) return false;
    out_.kernels[r.kernel_id] = std::string(tail.data, r.name_bytes);
    return true;
  }

  bool parse(const LaunchParamRecord& r, Tail) {
    // A misaligned value always comes with the alignment it broke: the findings divide by it.
    if (static_cast<LaunchProblem>(r.problem) == LaunchProblem::Misaligned && r.alignment < 2) return false;
    LaunchParamFact fact;
    fact.value = r.value;
    fact.kernel_id = r.kernel_id;
    fact.alignment = r.alignment;
    fact.param_index = r.param_index;
    fact.problem = static_cast<LaunchProblem>(r.problem);
    fact.path = r.path;
    fact.driver_result = r.driver_result;
    fact.memory_type = r.memory_type;
    fact.host_readable = r.host_readable != 0;
    fact.pointer_device = r.pointer_device;
    fact.launch_device = r.launch_device;
    add_event(EventKind::LaunchParam, r.seq, r.time_ns, r.stack_id, r.tid, fact);
    return true;
  }

  bool parse(const PythonStackRecord& r, Tail tail) {
    if (r.depth > kMaxPythonDepth || r.depth * sizeof(PythonFrame) > tail.bytes) return false;
    std::vector<PythonFrameInfo> frames(r.depth);
    size_t names = r.depth * sizeof(PythonFrame);
    for (uint32_t i = 0; i < r.depth; ++i) {
      const auto f = load<PythonFrame>(tail.data + i * sizeof(PythonFrame));
      if (names + f.file_bytes + f.function_bytes > tail.bytes) return false;
      frames[i].line = f.line;
      frames[i].file.assign(tail.data + names, f.file_bytes);
      frames[i].function.assign(tail.data + names + f.file_bytes, f.function_bytes);
      names += f.file_bytes + f.function_bytes;
    }
    out_.python_stacks.emplace(r.id, std::move(frames));
    return true;
  }

  bool parse(const AllocPythonRecord& r, Tail) {
    alloc_python_[r.seq] = {r.python_stack_id, r.launches};
    return true;
  }

  bool parse(const CallPointersRecord& r, Tail) {
    out_.call_pointers[r.seq] = {r.pointers[0], r.pointers[1]};
    return true;
  }

  bool parse(const CallbackNameRecord& r, Tail tail) {
    if (r.name_bytes > tail.bytes) return false;
    out_.runtime_names[r.cbid] = std::string(tail.data, r.name_bytes);
    return true;
  }

  bool parse(const SignalRecord& r, Tail) {
    add_event(EventKind::Signal, r.seq, r.time_ns, kNoStack, r.tid, SignalFact{r.signal});
    return true;
  }

  bool parse(const ExitCallRecord& r, Tail) {
    add_event(EventKind::ExitCall, r.seq, r.time_ns, kNoStack, 0, ExitFact{r.status, static_cast<ExitHow>(r.how)});
    return true;
  }

  bool parse(const GraphMemNodeRecord& r, Tail) {
    if (!api_info(r.api)) {
      ++unknown_apis_;
      return true;
    }
    GraphNodeFact fact{r.graph,
                       r.node,
                       r.dptr,
                       r.bytes,
                       r.device,
                       static_cast<Api>(r.api),
                       r.kind == static_cast<uint8_t>(GraphNodeKind::Alloc)};
    add_event(EventKind::GraphMemNode, r.seq, r.time_ns, r.stack_id, r.tid, fact);
    return true;
  }

  bool parse(const GraphChangeRecord& r, Tail) {
    if (r.change < 1 || r.change > 4) return true;  // a change a newer writer knows
    add_event(EventKind::GraphChange, r.seq, 0, kNoStack, 0,
              GraphChangeFact{static_cast<GraphChange>(r.change), r.graph, r.original, r.exec, r.flags});
    return true;
  }

  bool parse(const GraphLaunchRecord& r, Tail) {
    add_event(EventKind::GraphLaunch, r.seq, r.time_ns, kNoStack, r.tid, GraphLaunchFact{r.exec, r.result});
    return true;
  }

  bool parse(const SharedMemoryRecord& r, Tail) {
    if (r.role != static_cast<uint32_t>(SharedRole::Export) && r.role != static_cast<uint32_t>(SharedRole::Import))
      return true;
    out_.shared_memory.push_back({r.seq, r.time_ns, r.pointer, r.handle_hash, static_cast<SharedRole>(r.role)});
    return true;
  }

  bool parse(const ProcessEndRecord& r, Tail) {
    add_event(EventKind::ProcessEnd, r.seq, r.time_ns, kNoStack, 0, std::monostate{});
    out_.reached_exit = true;
    return true;
  }

  // The thread whose chunk the next records come from (compact events are relative to its previous one).
  void start_chunk(uint32_t tid) { chunk_tid_ = tid; }
  // A chunk that could not be read: the next compact event of its thread cannot follow on from it.
  void lose_chunk(uint32_t tid) { compact_.erase(tid); }
  size_t undecodable() const { return undecodable_; }
  size_t unknown_apis() const { return unknown_apis_; }
  size_t unknown_records() const { return unknown_records_; }
  void count_unknown_record() { ++unknown_records_; }

  // A long run's timeline, kept within kMaxSamples: of each two neighbouring samples of a device the
  // one that saw more memory in use stays (peaks survive), and the samples left say so.
  void thin_samples() {
    std::vector<MemorySample>& samples = out_.samples;
    std::stable_sort(samples.begin(), samples.end(), [](const MemorySample& a, const MemorySample& b) {
      return std::tie(a.device, a.seq) < std::tie(b.device, b.seq);
    });
    size_t kept = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      if (i + 1 < samples.size() && samples[i + 1].device == samples[i].device) {
        const MemorySample& a = samples[i];
        const MemorySample& b = samples[i + 1];
        MemorySample higher = a.free_bytes < b.free_bytes ? a : b;
        higher.launches = std::max(a.launches, b.launches);
        samples[kept++] = higher;
        ++i;
      } else {
        samples[kept++] = samples[i];
      }
    }
    out_.samples_thinned += samples.size() - kept;
    samples.resize(kept);
  }

  // seq of an allocation made from Python -> (its Python stack, launches before it).
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> take_alloc_python() { return std::move(alloc_python_); }

  CompactEventState compact_state(uint32_t tid) const {
    auto it = compact_.find(tid);
    return it == compact_.end() ? CompactEventState{} : it->second;
  }
  void set_compact_state(uint32_t tid, const CompactEventState& state) { compact_[tid] = state; }

 private:
  template <typename Payload>
  void add_event(EventKind kind, uint64_t seq, uint64_t time_ns, uint64_t stack_id, uint32_t tid, Payload payload) {
    Event e;
    e.kind = kind;
    e.seq = seq;
    e.time_ns = time_ns;
    e.stack_id = stack_id;
    e.tid = tid;
    e.payload = std::move(payload);
    out_.events.push_back(std::move(e));
  }

  bool add_memory_event(EventKind kind, const ApiEventRecord& r) {
    const Api legacy_block = version_ <= 4 ? legacy_block_api(r.api) : Api::Count;
    if (!api_info(r.api) && legacy_block == Api::Count) {
      ++unknown_apis_;
      return true;
    }
    MemoryEvent m;
    m.seq = r.seq;
    m.time_ns = r.time_ns;
    m.stack_id = r.stack_id;
    m.tid = r.tid;
    m.api = legacy_block != Api::Count ? legacy_block : static_cast<Api>(r.api);
    m.key = r.key;
    m.bytes = r.bytes;
    if (legacy_block != Api::Count) {
      m.pool = r.context_uid;  // before version 5 a block's context field carried its pool
    } else {
      m.context_uid = r.context_uid;
    }
    m.device = r.device;
    m.result = r.result;
    m.call_ns = r.call_ns;
    add_event(kind, r.seq, r.time_ns, r.stack_id, r.tid, m);
    return true;
  }

  bool add_context_change(EventKind kind, const ContextRecord& r) {
    add_event(kind, r.seq, r.time_ns, kNoStack, 0, ContextChange{r.context_uid, r.device});
    return true;
  }

  bool add_runtime_call(EventKind kind, const CallRecord& r) {
    add_event(kind, r.seq, r.time_ns, r.stack_id, r.tid, RuntimeCall{r.cbid, r.result});
    return true;
  }

  // Before version 5 a pool's blocks were allocations and releases of pseudo-APIs numbered right
  // after CUDA's 115 APIs of then, in the order of memory_sources.inc's block operations.
  static Api legacy_block_api(uint16_t id) {
    constexpr uint16_t kFirst = 115;
    constexpr Api kLegacy[] = {Api::nvtxMemRegionsRegister, Api::nvtxMemRegionsResize, Api::nvtxMemRegionsUnregister,
                               Api::nvtxMemHeapUnregister,  Api::nvtxMemHeapReset,     Api::cupyPoolMalloc,
                               Api::cupyPoolFree,           Api::torchBlockAlloc,      Api::torchBlockFree};
    return id >= kFirst && id - kFirst < static_cast<int>(std::size(kLegacy)) ? kLegacy[id - kFirst] : Api::Count;
  }

  ProcessTrace& out_;
  uint32_t version_;
  size_t unknown_apis_ = 0;
  size_t unknown_records_ = 0;
  size_t undecodable_ = 0;
  uint32_t chunk_tid_ = 0;
  std::unordered_map<uint32_t, CompactEventState> compact_;                   // per thread: its previous compact event
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> alloc_python_;  // seq -> (Python stack, launches)
};

// Loads a record of struct R (zero-filling what an older, shorter writer left out) and hands it
// to R's parse function with the bytes that follow it.
template <typename R>
bool parse_record(TraceBuilder& builder, const char* p, size_t size) {
  if (size < kMinRecordBytes<R>) return false;
  R r{};
  memcpy(&r, p, std::min(size, sizeof r));
  const size_t fixed = std::min(size, sizeof r);
  return builder.parse(r, Tail{p + fixed, size - fixed});
}

// One record, by its type; a type added by a newer writer is skipped.
bool parse_any_record(TraceBuilder& builder, const char* p, size_t size) {
  switch (static_cast<RecordType>(load<RecordHeader>(p).type)) {
#define CUAUDIT_RECORD(type, number, Struct, bytes) \
  case RecordType::type:                            \
    return parse_record<Struct>(builder, p, size);
#include "trace_records.inc"
#undef CUAUDIT_RECORD
  }
  builder.count_unknown_record();  // skipped, and counted in the report
  return true;
}

}  // namespace

std::string event_api_name(const ProcessTrace& trace, const Event& e) {
  if (e.is_memory()) return std::string(api_info(e.memory().api).name);
  if (const auto* call = std::get_if<RuntimeCall>(&e.payload)) return runtime_call_name(trace, call->cbid);
  return {};  // not a call
}

std::string runtime_call_name(const ProcessTrace& trace, uint32_t cbid) {
  auto it = trace.runtime_names.find(cbid);
  if (it == trace.runtime_names.end()) return fmt::format("runtime call #{}", cbid);
  std::string name = it->second;  // "cudaMemcpyAsync_ptsz_v7000"
  if (auto v = name.rfind("_v"); v != std::string::npos && v + 2 < name.size() &&
                                 name.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    name.erase(v);
  }
  for (const char* suffix : {"_ptsz", "_ptds"}) {
    if (auto at = name.rfind(suffix); at != std::string::npos && at + strlen(suffix) == name.size()) name.erase(at);
  }
  return name;
}

// Where a trace's bytes come from: a file read piece by piece (a trace larger than memory is
// never read whole), or bytes already in memory (tests, the fuzzer).
class TraceBytes {
 public:
  virtual ~TraceBytes() = default;
  virtual size_t size() const = 0;
  // `n` bytes at `offset` (within size()), valid until the next call.
  virtual const char* read(size_t offset, size_t n) = 0;
};

namespace {

class MemoryBytes : public TraceBytes {
 public:
  explicit MemoryBytes(std::string bytes) : bytes_(std::move(bytes)) {}
  size_t size() const override { return bytes_.size(); }
  const char* read(size_t offset, size_t) override { return bytes_.data() + offset; }

 private:
  std::string bytes_;
};

class FileBytes : public TraceBytes {
 public:
  explicit FileBytes(const std::string& path) {
    std::string error;
    // Regular files only: a trace replaced by a FIFO or a link to /dev/zero must not hang the report.
    if (!open_regular_file(path, fd_, size_, error)) throw TraceError(error);
  }
  ~FileBytes() override { ::close(fd_); }
  size_t size() const override { return size_; }
  const char* read(size_t offset, size_t n) override {
    buffer_.resize(n);
    size_t done = 0;
    while (done < n) {
      const ssize_t got = pread(fd_, buffer_.data() + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;  // the file shrank: what is missing reads as zeros, and fails its checksum
      done += static_cast<size_t>(got);
    }
    std::fill(buffer_.begin() + static_cast<std::ptrdiff_t>(done), buffer_.end(), '\0');
    return buffer_.data();
  }

 private:
  int fd_ = -1;
  size_t size_ = 0;
  std::string buffer_;
};

}  // namespace

// A chunk that holds events: where its complete records are, and what its thread's compact events
// followed on from when it began.
struct TraceFile::Chunk {
  size_t begin = 0, end = 0;  // payload bytes [begin, end)
  uint32_t tid = 0;
  uint64_t first_seq = 0;
  size_t file_index = 0;  // order in the file: ties in seq go to the earlier chunk
  CompactEventState compact;
};

TraceFile::TraceFile(std::unique_ptr<TraceBytes> bytes, const std::string& name) : bytes_(std::move(bytes)) {
  index(name);
}
TraceFile::~TraceFile() = default;
TraceFile::TraceFile(TraceFile&&) noexcept = default;
TraceFile& TraceFile::operator=(TraceFile&&) noexcept = default;

TraceFile TraceFile::open(const std::string& path) { return TraceFile(std::make_unique<FileBytes>(path), path); }

TraceFile TraceFile::from_bytes(std::string bytes, const std::string& name) {
  return TraceFile(std::make_unique<MemoryBytes>(std::move(bytes)), name);
}

// Pass 1: every record is read once; what is not an event is kept (modules, stacks, names, memory
// samples, ...), events are only counted per chunk, for the merge.
void TraceFile::index(const std::string& name) {
  TraceBytes& bytes = *bytes_;
  if (bytes.size() < sizeof(FileHeader) ||
      memcmp(bytes.read(0, sizeof(FileHeader)), kFileMagic, sizeof kFileMagic) != 0) {
    throw TraceError(
        fmt::format("{} is not a cuaudit trace (no CUAUDTRC header); give `cuaudit report` "
                    "the directory a `cuaudit --save DIR` run wrote",
                    name));
  }
  const auto header = load<FileHeader>(bytes.read(0, sizeof(FileHeader)));
  if (header.version < kOldestReadableVersion || header.version > kTraceVersion) {
    throw TraceError(
        fmt::format("{} has trace format version {}, this cuaudit reads version {}; analyze it "
                    "with the cuaudit that recorded it",
                    name, header.version, kTraceVersion));
  }
  if (header.header_size < sizeof(FileHeader) || header.header_size > bytes.size()) {
    throw TraceError(fmt::format("{} has a damaged header", name));
  }

  version_ = header.version;
  ProcessTrace& out = metadata_;
  out.file = name;
  out.pid = header.pid;
  TraceBuilder parser(out, header.version);
  const size_t size = bytes.size();
  size_t pos = header.header_size;
  size_t bad_records = 0, damaged_chunks = 0, damaged_bytes = 0;
  while (pos < size) {
    if (size - pos < sizeof(ChunkHeader)) {
      out.cut_short_problem = out.problems.size();
      out.problems.push_back(
          fmt::format("the trace ends inside a chunk header ({} stray bytes at the end): "
                      "the process was probably killed while writing",
                      size - pos));
      break;
    }
    const auto chunk = load<ChunkHeader>(bytes.read(pos, sizeof(ChunkHeader)));
    if (chunk.magic != kChunkMagic) {
      out.problems.push_back(
          fmt::format("damaged chunk at offset {}; the {} bytes after it were not read", pos, size - pos));
      break;
    }
    const size_t payload = pos + sizeof chunk;
    // A chunk cut short (the process was killed while writing it) still holds complete records.
    const bool truncated = chunk.payload_bytes > size - payload;
    const size_t end = truncated ? size : payload + chunk.payload_bytes;
    const char* data = bytes.read(payload, end - payload);
    if (!truncated && header.version >= 2 && chunk_checksum(data, chunk.payload_bytes) != chunk.checksum) {
      ++damaged_chunks;  // its records cannot be trusted: none is read
      damaged_bytes += chunk.payload_bytes;
      parser.lose_chunk(chunk.tid);
      pos = end;
      continue;
    }
    Chunk info;
    info.begin = payload;
    info.tid = chunk.tid;
    info.file_index = chunks_.size();
    info.compact = parser.compact_state(chunk.tid);
    size_t complete = 0;
    parser.start_chunk(chunk.tid);
    size_t r = 0;
    while (r < end - payload) {
      const size_t left = end - payload - r;
      const auto rh = left >= sizeof(RecordHeader) ? load<RecordHeader>(data + r) : RecordHeader{};
      if (truncated && (left < sizeof(RecordHeader) || rh.size > left)) break;  // the record the cut went through
      const size_t events_before = out.events.size();
      if (rh.size < sizeof(RecordHeader) || rh.size > left || !parse_any_record(parser, data + r, rh.size)) {
        ++bad_records;
        parser.lose_chunk(chunk.tid);
        break;
      }
      if (out.events.size() > events_before) event_types_[rh.type] = true;
      ++complete;
      r += rh.size;
    }
    info.end = payload + r;
    if (!out.events.empty()) {  // counted, not kept: the merge reads them again (pass 2)
      info.first_seq = UINT64_MAX;
      for (const Event& e : out.events) info.first_seq = std::min(info.first_seq, e.seq);
      event_count_ += out.events.size();
      out.events.clear();
      chunks_.push_back(info);
    }
    if (truncated) {
      out.cut_short_problem = out.problems.size();
      out.problems.push_back(
          fmt::format("the last chunk is truncated ({} of {} bytes): the process was probably killed while writing; "
                      "its {} complete record(s) were read, the rest is lost",
                      size - payload, chunk.payload_bytes, complete));
      break;
    }
    pos = payload + chunk.payload_bytes;
  }
  out.events.shrink_to_fit();
  if (bad_records)
    out.problems.push_back(fmt::format("{} chunk(s) held a malformed record and were cut short", bad_records));
  if (damaged_chunks) {
    out.problems.push_back(
        fmt::format("{} chunk(s) ({} bytes) failed their checksum (the file was damaged after it "
                    "was written); their records were not read",
                    damaged_chunks, damaged_bytes));
  }
  if (parser.undecodable()) {
    out.problems.push_back(fmt::format(
        "{} allocation(s) or release(s) could not be decoded: each follows on from an event in a damaged chunk",
        parser.undecodable()));
  }
  if (parser.unknown_records()) {
    out.problems.push_back(
        fmt::format("{} record(s) of a type this cuaudit does not know were skipped (a newer cuaudit wrote them)",
                    parser.unknown_records()));
  }
  if (parser.unknown_apis()) {
    out.problems.push_back(
        fmt::format("{} event(s) name an API this cuaudit does not know; they were skipped", parser.unknown_apis()));
  }
  alloc_python_ = parser.take_alloc_python();
  std::stable_sort(out.samples.begin(), out.samples.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.seq < b.seq; });
  std::stable_sort(out.device_states.begin(), out.device_states.end(),
                   [](const DeviceState& a, const DeviceState& b) { return a.seq < b.seq; });
  std::stable_sort(chunks_.begin(), chunks_.end(), [](const Chunk& a, const Chunk& b) {
    return std::tie(a.first_seq, a.file_index) < std::tie(b.first_seq, b.file_index);
  });
}

// Pass 2: the chunks' events merged by sequence number. A chunk is decoded when the merge reaches
// its first event, and dropped when its last has been handed on: only chunks whose events overlap
// in time (one per busy thread) are in memory at once.
void TimedMerge::before(const Event* next, const std::function<void(const Event&)>& sink) {
  if (!timed_) return;
  for (; next_ < timed_->size() && (!next || (*timed_)[next_].time_ns < next->time_ns); ++next_) {
    Event t = (*timed_)[next_];
    // It takes the seq of the first sample after it in time, so that the replay shows it exactly
    // the samples taken before it (samples are in seq order, which is the order of their times). Not
    // the next event's: the program's threads take seq and time apart, and one event's seq may be
    // below a sample's while its time is above.
    auto sample = std::upper_bound(samples_.begin(), samples_.end(), t.time_ns,
                                   [](uint64_t ns, const MemorySample& s) { return ns < s.time_ns; });
    t.seq = sample != samples_.end() ? sample->seq : last_seq_ + 1;  // after the last sample: after everything
    if (t.is_memory()) t.memory().seq = t.seq;
    last_seq_ = std::max(last_seq_, t.seq);
    sink(t);
  }
}

std::vector<Event> merge_by_time(const ProcessTrace& trace, const std::vector<Event>& timed) {
  std::vector<Event> out;
  TimedMerge merge(&timed, trace.samples);
  auto keep = [&](const Event& e) { out.push_back(e); };
  for (const Event& e : trace.events) {
    merge.before(&e, keep);
    merge.handed_on(e.seq);
    out.push_back(e);
  }
  merge.before(nullptr, keep);
  return out;
}

void TraceFile::play(const std::function<void(const Event&)>& sink, const std::vector<Event>* timed) const {
  TimedMerge merge(timed, metadata_.samples);
  struct Loaded {
    std::vector<Event> events;  // sorted by seq
    size_t next = 0;
    size_t file_index = 0;
  };
  std::vector<std::unique_ptr<Loaded>> loaded;
  auto later = [&](size_t a, size_t b) {  // the heap's order: smallest (seq, file order) on top
    const Loaded& x = *loaded[a];
    const Loaded& y = *loaded[b];
    return std::tie(x.events[x.next].seq, x.file_index) > std::tie(y.events[y.next].seq, y.file_index);
  };
  std::vector<size_t> heap, free_slots;
  ProcessTrace scratch;  // what the builder makes of the events' records
  auto load_chunk = [&](const Chunk& c) {
    scratch.events.clear();
    TraceBuilder builder(scratch, version_);
    builder.start_chunk(c.tid);
    builder.set_compact_state(c.tid, c.compact);
    const char* data = bytes_->read(c.begin, c.end - c.begin);
    for (size_t r = 0; r < c.end - c.begin;) {
      const auto rh = load<RecordHeader>(data + r);
      if (event_types_[rh.type]) parse_any_record(builder, data + r, rh.size);
      r += rh.size;
    }
    if (scratch.events.empty()) return;
    auto chunk = std::make_unique<Loaded>();
    chunk->events = std::move(scratch.events);
    chunk->file_index = c.file_index;
    std::stable_sort(chunk->events.begin(), chunk->events.end(),
                     [](const Event& a, const Event& b) { return a.seq < b.seq; });
    attach_python_stacks(chunk->events);
    size_t slot;
    if (free_slots.empty()) {
      slot = loaded.size();
      loaded.push_back(std::move(chunk));
    } else {
      slot = free_slots.back();
      free_slots.pop_back();
      loaded[slot] = std::move(chunk);
    }
    heap.push_back(slot);
    std::push_heap(heap.begin(), heap.end(), later);
  };
  size_t pending = 0;
  for (;;) {
    while (
        pending < chunks_.size() &&
        (heap.empty() || chunks_[pending].first_seq <= loaded[heap.front()]->events[loaded[heap.front()]->next].seq)) {
      load_chunk(chunks_[pending++]);
    }
    if (heap.empty()) break;
    std::pop_heap(heap.begin(), heap.end(), later);
    const size_t slot = heap.back();
    Loaded& chunk = *loaded[slot];
    merge.before(&chunk.events[chunk.next], sink);
    merge.handed_on(chunk.events[chunk.next].seq);
    sink(chunk.events[chunk.next]);
    if (++chunk.next < chunk.events.size()) {
      std::push_heap(heap.begin(), heap.end(), later);
    } else {
      heap.pop_back();
      loaded[slot].reset();
      free_slots.push_back(slot);
    }
  }
  merge.before(nullptr, sink);
}

// Allocations made from Python get the id of the stack recorded with them.
void TraceFile::attach_python_stacks(std::vector<Event>& events) const {
  if (alloc_python_.empty()) return;
  for (Event& e : events) {
    if (e.kind != EventKind::Alloc) continue;
    if (auto it = alloc_python_.find(e.seq); it != alloc_python_.end()) {
      e.memory().python_stack_id = it->second.first;
      e.memory().launches = it->second.second;
    }
  }
}

ProcessTrace TraceFile::materialize() const {
  ProcessTrace out = metadata_;
  out.events.reserve(event_count_);
  play([&](const Event& e) { out.events.push_back(e); });
  return out;
}

ProcessTrace parse_trace(const std::string& bytes, const std::string& name) {
  return TraceFile::from_bytes(bytes, name).materialize();
}

ProcessTrace read_trace_file(const std::string& path) { return TraceFile::open(path).materialize(); }

}  // namespace cuaudit
