#include "record_parser.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <tuple>

#include <fmt/format.h>

#include "bounded_facts.h"
#include "legacy_blocks.h"
#include "trace_format.h"

namespace cuaudit {

using namespace cuaudit::trace;

namespace {

std::string hex_bytes(const uint8_t* p, size_t n) { return fmt::format("{:02x}", fmt::join(p, p + n, "")); }

std::vector<std::string> split_cmdline(const char* p, size_t n) {
  std::vector<std::string> args;
  for (size_t start = 0; start < n;) {
    const size_t end = static_cast<size_t>(std::find(p + start, p + n, '\0') - p);
    args.emplace_back(p + start, end - start);
    start = end + 1;
  }
  return args;
}

// The bytes after a record's fixed part: a path, a name, frames.
struct Tail {
  const char* data;
  size_t bytes;
};

}  // namespace

// Builds a ProcessTrace from records, one parse function per record struct (trace_records.inc
// dispatches to them). Each returns false when the record is malformed (the rest of the chunk is
// then skipped).
class RecordParser::Builder {
 public:
  Builder(ProcessTrace& out, uint32_t version) : out_(out), version_(version) {
    if (version >= kFirstClosedVersion) out_.ends_closed = false;
  }

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

  bool parse(const StackSamplingRecord& r, Tail) {
    if (r.mean_bytes) out_.stack_sampling = {r.mean_bytes, r.exact_bytes};
    return r.mean_bytes != 0;
  }

  bool parse(const CompactionRecord& r, Tail) { return (out_.compaction = r).has_value(); }

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
    if (r.code == static_cast<uint32_t>(NoticeCode::DeviceHeapMode)) out_.device_heap_mode = true;
    return true;
  }

  bool parse(const FailedCallRecord& r, Tail) { return add_runtime_call(EventKind::FailedCall, r); }
  bool parse(const LastErrorRecord& r, Tail) { return add_runtime_call(EventKind::LastError, r); }
  bool parse(const CallSiteRecord& r, Tail) { return add_runtime_call(EventKind::CallSite, r); }

  bool parse(const MemorySampleRecord& r, Tail) {
    out_.samples.push_back({r.seq, r.time_ns, r.device, r.free_bytes, r.total_bytes, r.launches});
    if (out_.samples.size() >= kMaxSamples) thin_samples(out_);
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
    out_.pools[r.pool] = {
        static_cast<MemorySource>(r.kind), std::string(tail.data, r.name_bytes), r.base, r.bytes, r.stack_id, r.device};
    return true;
  }

  bool parse(const PoolBlockRecord& r, Tail) {
    const SourceInfo* source = source_info(r.source);
    const Api api =
        source && is_known_block_op(r.op) ? block_api(source->source, static_cast<BlockOp>(r.op)) : Api::Count;
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
      const auto f = load_unaligned<PythonFrame>(tail.data + i * sizeof(PythonFrame));
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
    out_.exit_called = true;
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

  bool parse(const ManagedMigrationRecord& r, Tail) {
    keep_migration(out_, {r.start_ns, r.end_ns, r.address, r.value, r.src_id, r.dst_id,
                          static_cast<MigrationKind>(r.kind), static_cast<MigrationCause>(r.cause)});
    return true;
  }
  bool parse(const KernelSpanRecord& r, Tail) {
    return keep_kernel_span(out_, {r.start_ns, r.end_ns, r.kernel_id, r.device, r.stream});
  }

  bool parse(const DeviceHeapLaunchRecord& r, Tail tail) {
    if (r.name_bytes > tail.bytes) return false;
    DeviceHeapLaunchFact& l = out_.device_heap_launches[r.launch_id];
    l = {r.launch_id, r.time_ns, r.stack_id, r.function_pc, r.function_bytes, r.heap_bytes};
    std::copy_n(r.grid, 3, l.grid.begin()), std::copy_n(r.block, 3, l.block.begin());
    l.device = r.device;
    l.name.assign(tail.data, r.name_bytes);
    return true;
  }
  bool parse(const DeviceHeapCallRecord& r, Tail) {
    if (r.kind != static_cast<uint8_t>(DeviceHeapCall::Malloc) && r.kind != static_cast<uint8_t>(DeviceHeapCall::Free))
      return false;
    keep_device_heap_call(out_, {r.launch_id, r.pc, r.address, r.bytes, static_cast<DeviceHeapCall>(r.kind)});
    return true;
  }

  bool parse(const TraceClosedRecord&, Tail) { return true; }
  // Every record: whether the file so far ends with the writer's closing mark (version 6 on).
  void saw_record(bool closing) { out_.ends_closed = out_.ends_closed ? std::optional(closing) : std::nullopt; }

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

  ProcessTrace& out_;
  uint32_t version_;
  size_t unknown_apis_ = 0;
  size_t unknown_records_ = 0;
  size_t undecodable_ = 0;
  uint32_t chunk_tid_ = 0;
  std::unordered_map<uint32_t, CompactEventState> compact_;                   // per thread: its previous compact event
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> alloc_python_;  // seq -> (Python stack, launches)
};

namespace {

// Loads a record of struct R (zero-filling what an older, shorter writer left out) and hands it
// to R's parse function with the bytes that follow it.
template <typename R>
bool parse_record(RecordParser::Builder& builder, const char* p, size_t size) {
  if (size < kMinRecordBytes<R>) return false;
  R r{};
  memcpy(&r, p, std::min(size, sizeof r));
  const size_t fixed = std::min(size, sizeof r);
  return builder.parse(r, Tail{p + fixed, size - fixed});
}

// One record, by its type; a type added by a newer writer is skipped.
bool parse_any_record(RecordParser::Builder& builder, const char* p, size_t size) {
  const auto type = static_cast<RecordType>(load_unaligned<RecordHeader>(p).type);
  builder.saw_record(type == RecordType::TraceClosed);
  switch (type) {
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

RecordParser::RecordParser(ProcessTrace& out, uint32_t version) : builder_(std::make_unique<Builder>(out, version)) {}
RecordParser::~RecordParser() = default;
bool RecordParser::parse(const char* record, size_t size) { return parse_any_record(*builder_, record, size); }
void RecordParser::start_chunk(uint32_t tid) { builder_->start_chunk(tid); }
void RecordParser::lose_chunk(uint32_t tid) { builder_->lose_chunk(tid); }
CompactEventState RecordParser::compact_state(uint32_t tid) const { return builder_->compact_state(tid); }
void RecordParser::set_compact_state(uint32_t tid, const CompactEventState& state) {
  builder_->set_compact_state(tid, state);
}
size_t RecordParser::undecodable() const { return builder_->undecodable(); }
size_t RecordParser::unknown_apis() const { return builder_->unknown_apis(); }
size_t RecordParser::unknown_records() const { return builder_->unknown_records(); }
std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> RecordParser::take_alloc_python() {
  return builder_->take_alloc_python();
}

}  // namespace cuaudit
