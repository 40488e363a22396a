#include "trace_reader.h"

#include "safe_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

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
  explicit TraceBuilder(ProcessTrace& out) : out_(out) {}

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

  bool parse(const KernelRecord& r, Tail tail) {
    if (r.name_bytes > tail.bytes) return false;
    out_.kernels[r.kernel_id] = std::string(tail.data, r.name_bytes);
    return true;
  }

  bool parse(const LaunchParamRecord& r, Tail) {
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

  // Allocations made from Python get the id of the stack that follows them in the trace.
  void attach_python_stacks(std::vector<Event>& events) const {
    if (alloc_python_.empty()) return;
    for (Event& e : events) {
      if (e.kind != EventKind::Alloc) continue;
      if (auto it = alloc_python_.find(e.seq); it != alloc_python_.end()) {
        e.memory().python_stack_id = it->second.first;
        e.memory().launches = it->second.second;
      }
    }
  }

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
    if (!api_info(r.api)) {
      ++unknown_apis_;
      return true;
    }
    MemoryEvent m;
    m.seq = r.seq;
    m.time_ns = r.time_ns;
    m.stack_id = r.stack_id;
    m.tid = r.tid;
    m.api = static_cast<Api>(r.api);
    m.key = r.key;
    m.bytes = r.bytes;
    m.context_uid = r.context_uid;
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

ProcessTrace parse_trace(const std::string& bytes, const std::string& name) {
  if (bytes.size() < sizeof(FileHeader) || memcmp(bytes.data(), kFileMagic, sizeof kFileMagic) != 0) {
    throw TraceError(
        fmt::format("{} is not a cuaudit trace (no CUAUDTRC header); give `cuaudit report` "
                    "the directory a `cuaudit --save DIR` run wrote",
                    name));
  }
  const auto header = load<FileHeader>(bytes.data());
  if (header.version < kOldestReadableVersion || header.version > kTraceVersion) {
    throw TraceError(
        fmt::format("{} has trace format version {}, this cuaudit reads version {}; analyze it "
                    "with the cuaudit that recorded it",
                    name, header.version, kTraceVersion));
  }
  if (header.header_size < sizeof(FileHeader) || header.header_size > bytes.size()) {
    throw TraceError(fmt::format("{} has a damaged header", name));
  }

  ProcessTrace out;
  out.file = name;
  out.pid = header.pid;
  TraceBuilder parser(out);
  size_t pos = header.header_size;
  size_t bad_records = 0, damaged_chunks = 0, damaged_bytes = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < sizeof(ChunkHeader)) {
      out.problems.push_back(
          fmt::format("the trace ends inside a chunk header ({} stray bytes at the end): "
                      "the process was probably killed while writing",
                      bytes.size() - pos));
      break;
    }
    const auto chunk = load<ChunkHeader>(bytes.data() + pos);
    if (chunk.magic != kChunkMagic) {
      out.problems.push_back(
          fmt::format("damaged chunk at offset {}; the {} bytes after it were not read", pos, bytes.size() - pos));
      break;
    }
    const size_t payload = pos + sizeof chunk;
    // A chunk cut short (the process was killed while writing it) still holds complete records.
    const bool truncated = chunk.payload_bytes > bytes.size() - payload;
    const size_t end = truncated ? bytes.size() : payload + chunk.payload_bytes;
    if (!truncated && header.version >= 2 &&
        chunk_checksum(bytes.data() + payload, chunk.payload_bytes) != chunk.checksum) {
      ++damaged_chunks;  // its records cannot be trusted: none is read
      damaged_bytes += chunk.payload_bytes;
      parser.lose_chunk(chunk.tid);
      pos = end;
      continue;
    }
    size_t complete = 0;
    parser.start_chunk(chunk.tid);
    for (size_t r = payload; r < end;) {
      const size_t left = end - r;
      const auto rh = left >= sizeof(RecordHeader) ? load<RecordHeader>(bytes.data() + r) : RecordHeader{};
      if (truncated && (left < sizeof(RecordHeader) || rh.size > left)) break;  // the record the cut went through
      if (rh.size < sizeof(RecordHeader) || rh.size > left || !parse_any_record(parser, bytes.data() + r, rh.size)) {
        ++bad_records;
        parser.lose_chunk(chunk.tid);
        break;
      }
      ++complete;
      r += rh.size;
    }
    if (truncated) {
      out.problems.push_back(
          fmt::format("the last chunk is truncated ({} of {} bytes): the process was probably killed while writing; "
                      "its {} complete record(s) were read, the rest is lost",
                      bytes.size() - payload, chunk.payload_bytes, complete));
      break;
    }
    pos = payload + chunk.payload_bytes;
  }
  if (bad_records)
    out.problems.push_back(fmt::format("{} chunk(s) held a malformed record and were cut short", bad_records));
  if (damaged_chunks) {
    out.problems.push_back(
        fmt::format("{} chunk(s) ({} bytes) failed their checksum (the file was damaged after it "
                    "was written); their records were not read",
                    damaged_chunks, damaged_bytes));
  }
  if (parser.unknown_records()) {
    out.problems.push_back(
        fmt::format("{} record(s) of a type this cuaudit does not know were skipped (a newer cuaudit wrote them)",
                    parser.unknown_records()));
  }
  if (parser.undecodable()) {
    out.problems.push_back(fmt::format(
        "{} allocation(s) or release(s) could not be decoded: each follows on from an event in a damaged chunk",
        parser.undecodable()));
  }
  if (parser.unknown_apis()) {
    out.problems.push_back(
        fmt::format("{} event(s) name an API this cuaudit does not know; they were skipped", parser.unknown_apis()));
  }
  std::stable_sort(out.events.begin(), out.events.end(), [](const Event& a, const Event& b) { return a.seq < b.seq; });
  parser.attach_python_stacks(out.events);
  std::stable_sort(out.samples.begin(), out.samples.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.seq < b.seq; });
  std::stable_sort(out.device_states.begin(), out.device_states.end(),
                   [](const DeviceState& a, const DeviceState& b) { return a.seq < b.seq; });
  return out;
}

ProcessTrace read_trace_file(const std::string& path) {
  std::string contents, error;
  // Regular files only: a trace replaced by a FIFO or a link to /dev/zero must not hang the report.
  if (!read_regular_file(path, SIZE_MAX, contents, error)) throw TraceError(error);
  return parse_trace(contents, path);
}

}  // namespace cuaudit
