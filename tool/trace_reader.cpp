#include "trace_reader.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

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

class RecordParser {
 public:
  explicit RecordParser(ProcessTrace& out) : out_(out) {}

  // Returns false when the record is malformed (the rest of the chunk is then skipped).
  bool parse(const char* p, size_t size) {
    const auto header = load<RecordHeader>(p);
    switch (static_cast<RecordType>(header.type)) {
      case RecordType::ProcessInfo: {
        if (size < sizeof(ProcessInfoRecord)) return false;
        const auto r = load<ProcessInfoRecord>(p);
        if (sizeof r + r.cmdline_bytes > size) return false;
        out_.pid = r.pid;
        out_.parent_pid = r.parent_pid;
        out_.start_realtime_ns = r.start_realtime_ns;
        out_.start_monotonic_ns = r.start_monotonic_ns;
        out_.command = split_cmdline(p + sizeof r, r.cmdline_bytes);
        out_.flush_interval_ms = r.flush_interval_ms;
        return true;
      }
      case RecordType::Module: {
        if (size < sizeof(ModuleRecord)) return false;
        const auto r = load<ModuleRecord>(p);
        if (sizeof r + r.path_bytes > size || r.build_id_bytes > kMaxBuildIdBytes) return false;
        out_.modules.push_back({r.load_bias, r.start, r.end, std::string(p + sizeof r, r.path_bytes),
                                hex_bytes(r.build_id, r.build_id_bytes)});
        return true;
      }
      case RecordType::Stack: {
        if (size < sizeof(StackRecord)) return false;
        const auto r = load<StackRecord>(p);
        if (r.depth > kMaxStackDepth + 1 || sizeof r + r.depth * sizeof(uint64_t) > size) return false;
        std::vector<uint64_t> frames(r.depth);
        memcpy(frames.data(), p + sizeof r, r.depth * sizeof(uint64_t));
        out_.stacks.emplace(r.id, std::move(frames));
        return true;
      }
      case RecordType::Alloc:
      case RecordType::Free: {
        if (size < sizeof(ApiEventRecord)) return false;
        const auto r = load<ApiEventRecord>(p);
        if (!api_info(r.api)) {
          ++unknown_apis_;
          return true;
        }
        Event e{header.type == static_cast<uint16_t>(RecordType::Alloc) ? EventKind::Alloc : EventKind::Free};
        e.api = static_cast<Api>(r.api);
        e.seq = r.seq;
        e.time_ns = r.time_ns;
        e.key = r.key;
        e.bytes = r.bytes;
        e.stack_id = r.stack_id;
        e.tid = r.tid;
        e.context_uid = r.context_uid;
        e.device = r.device;
        e.result = r.result;
        out_.events.push_back(e);
        return true;
      }
      case RecordType::ContextCreated:
      case RecordType::ContextDestroyed: {
        if (size < sizeof(ContextRecord)) return false;
        const auto r = load<ContextRecord>(p);
        Event e{header.type == static_cast<uint16_t>(RecordType::ContextCreated) ? EventKind::ContextCreated
                                                                                : EventKind::ContextDestroyed};
        e.seq = r.seq;
        e.time_ns = r.time_ns;
        e.context_uid = r.context_uid;
        e.device = r.device;
        out_.events.push_back(e);
        return true;
      }
      case RecordType::Notice: {
        if (size < sizeof(NoticeRecord)) return false;
        const auto r = load<NoticeRecord>(p);
        if (sizeof r + r.text_bytes > size) return false;
        out_.notices.emplace_back(p + sizeof r, r.text_bytes);
        if (r.code == static_cast<uint32_t>(NoticeCode::SubscribeFailed)) out_.tracked = false;
        return true;
      }
      case RecordType::FailedCall:
      case RecordType::LastError:
      case RecordType::CallSite: {
        if (size < sizeof(CallRecord)) return false;
        const auto r = load<CallRecord>(p);
        const auto type = static_cast<RecordType>(header.type);
        Event e{type == RecordType::FailedCall  ? EventKind::FailedCall
                : type == RecordType::LastError ? EventKind::LastError
                                                : EventKind::CallSite};
        e.seq = r.seq;
        e.time_ns = r.time_ns;
        e.stack_id = r.stack_id;
        e.tid = r.tid;
        e.result = r.result;
        e.cbid = r.cbid;
        out_.events.push_back(e);
        return true;
      }
      case RecordType::MemorySample: {
        if (size < offsetof(MemorySampleRecord, launches)) return false;
        MemorySampleRecord r{};
        memcpy(&r, p, std::min(size, sizeof r));
        // Records of 48 bytes (before the launch count was added) leave `launches` zero.
        const uint64_t launches = size >= sizeof(MemorySampleRecord) ? r.launches : 0;
        out_.samples.push_back({r.seq, r.time_ns, r.device, r.free_bytes, r.total_bytes, launches});
        return true;
      }
      case RecordType::Kernel: {
        if (size < sizeof(KernelRecord)) return false;
        const auto r = load<KernelRecord>(p);
        if (sizeof r + r.name_bytes > size) return false;
        out_.kernels[r.kernel_id] = std::string(p + sizeof r, r.name_bytes);
        return true;
      }
      case RecordType::LaunchParam: {
        if (size < sizeof(LaunchParamRecord)) return false;
        const auto r = load<LaunchParamRecord>(p);
        Event e{EventKind::LaunchParam};
        e.seq = r.seq;
        e.time_ns = r.time_ns;
        e.stack_id = r.stack_id;
        e.key = r.value;
        e.tid = r.tid;
        e.result = r.driver_result;
        e.launch = {r.kernel_id, r.alignment, r.param_index, r.problem, r.path, r.memory_type, r.host_readable != 0};
        out_.events.push_back(e);
        return true;
      }
      case RecordType::PythonStack: {
        if (size < sizeof(PythonStackRecord)) return false;
        const auto r = load<PythonStackRecord>(p);
        if (r.depth > kMaxPythonDepth || sizeof r + r.depth * sizeof(PythonFrame) > size) return false;
        std::vector<PythonFrameInfo> frames(r.depth);
        size_t names = sizeof r + r.depth * sizeof(PythonFrame);
        for (uint32_t i = 0; i < r.depth; ++i) {
          const auto f = load<PythonFrame>(p + sizeof r + i * sizeof(PythonFrame));
          if (names + f.file_bytes + f.function_bytes > size) return false;
          frames[i].line = f.line;
          frames[i].file.assign(p + names, f.file_bytes);
          frames[i].function.assign(p + names + f.file_bytes, f.function_bytes);
          names += f.file_bytes + f.function_bytes;
        }
        out_.python_stacks.emplace(r.id, std::move(frames));
        return true;
      }
      case RecordType::AllocPython: {
        if (size < sizeof(AllocPythonRecord)) return false;
        const auto r = load<AllocPythonRecord>(p);
        alloc_python_[r.seq] = {r.python_stack_id, r.launches};
        return true;
      }
      case RecordType::CallPointers: {
        if (size < sizeof(CallPointersRecord)) return false;
        const auto r = load<CallPointersRecord>(p);
        out_.call_pointers[r.seq] = {r.pointers[0], r.pointers[1]};
        return true;
      }
      case RecordType::CallbackName: {
        if (size < sizeof(CallbackNameRecord)) return false;
        const auto r = load<CallbackNameRecord>(p);
        if (sizeof r + r.name_bytes > size) return false;
        out_.runtime_names[r.cbid] = std::string(p + sizeof r, r.name_bytes);
        return true;
      }
      case RecordType::Signal: {
        if (size < sizeof(SignalRecord)) return false;
        const auto r = load<SignalRecord>(p);
        Event e{EventKind::Signal};
        e.seq = r.seq;
        e.time_ns = r.time_ns;
        e.result = r.signal;
        e.tid = r.tid;
        out_.events.push_back(e);
        return true;
      }
      case RecordType::ExitCall: {
        if (size < sizeof(ExitCallRecord)) return false;
        const auto r = load<ExitCallRecord>(p);
        Event e{EventKind::ExitCall};
        e.seq = r.seq;
        e.time_ns = r.time_ns;
        e.result = r.status;
        e.cbid = r.how;
        out_.events.push_back(e);
        return true;
      }
      case RecordType::ProcessEnd: {
        if (size < sizeof(ProcessEndRecord)) return false;
        const auto r = load<ProcessEndRecord>(p);
        Event e{EventKind::ProcessEnd};
        e.seq = r.seq;
        e.time_ns = r.time_ns;
        out_.events.push_back(e);
        out_.reached_exit = true;
        return true;
      }
    }
    return true;  // a record type added by a newer writer: skip it
  }

  size_t unknown_apis() const { return unknown_apis_; }

  // Allocations made from Python get the id of the stack that follows them in the trace.
  void attach_python_stacks(std::vector<Event>& events) const {
    if (alloc_python_.empty()) return;
    for (Event& e : events) {
      if (e.kind != EventKind::Alloc) continue;
      if (auto it = alloc_python_.find(e.seq); it != alloc_python_.end()) {
        e.python_stack_id = it->second.first;
        e.launches = it->second.second;
      }
    }
  }

 private:
  ProcessTrace& out_;
  size_t unknown_apis_ = 0;
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> alloc_python_;  // seq -> (Python stack, launches)
};

}  // namespace

std::string event_api_name(const ProcessTrace& trace, const Event& e) {
  if (e.kind == EventKind::Alloc || e.kind == EventKind::Free) return std::string(api_info(e.api).name);
  auto it = trace.runtime_names.find(e.cbid);
  if (it == trace.runtime_names.end()) return fmt::format("runtime call #{}", e.cbid);
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
    throw TraceError(fmt::format("{} is not a cuaudit trace (no CUAUDTRC header); give `cuaudit report` "
                                 "the directory a `cuaudit --save DIR` run wrote",
                                 name));
  }
  const auto header = load<FileHeader>(bytes.data());
  if (header.version != kTraceVersion) {
    throw TraceError(fmt::format("{} has trace format version {}, this cuaudit reads version {}; analyze it "
                                 "with the cuaudit that recorded it",
                                 name, header.version, kTraceVersion));
  }
  if (header.header_size < sizeof(FileHeader) || header.header_size > bytes.size()) {
    throw TraceError(fmt::format("{} has a damaged header", name));
  }

  ProcessTrace out;
  out.file = name;
  out.pid = header.pid;
  RecordParser parser(out);
  size_t pos = header.header_size;
  size_t bad_records = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < sizeof(ChunkHeader)) {
      out.problems.push_back(fmt::format("the trace ends inside a chunk header ({} stray bytes at the end): "
                                         "the process was probably killed while writing",
                                         bytes.size() - pos));
      break;
    }
    const auto chunk = load<ChunkHeader>(bytes.data() + pos);
    if (chunk.magic != kChunkMagic) {
      out.problems.push_back(fmt::format("damaged chunk at offset {}; the {} bytes after it were not read", pos,
                                         bytes.size() - pos));
      break;
    }
    const size_t payload = pos + sizeof chunk;
    if (chunk.payload_bytes > bytes.size() - payload) {
      out.problems.push_back(fmt::format("the last chunk is truncated ({} of {} bytes): the process was "
                                         "probably killed while writing; its events are not included",
                                         bytes.size() - payload, chunk.payload_bytes));
      break;
    }
    for (size_t r = payload; r < payload + chunk.payload_bytes;) {
      const size_t left = payload + chunk.payload_bytes - r;
      const auto rh = left >= sizeof(RecordHeader) ? load<RecordHeader>(bytes.data() + r) : RecordHeader{};
      if (rh.size < sizeof(RecordHeader) || rh.size > left || !parser.parse(bytes.data() + r, rh.size)) {
        ++bad_records;
        break;
      }
      r += rh.size;
    }
    pos = payload + chunk.payload_bytes;
  }
  if (bad_records) out.problems.push_back(fmt::format("{} chunk(s) held a malformed record and were cut short", bad_records));
  if (parser.unknown_apis()) {
    out.problems.push_back(fmt::format("{} event(s) name an API this cuaudit does not know; they were skipped",
                                       parser.unknown_apis()));
  }
  std::stable_sort(out.events.begin(), out.events.end(), [](const Event& a, const Event& b) { return a.seq < b.seq; });
  parser.attach_python_stacks(out.events);
  std::stable_sort(out.samples.begin(), out.samples.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.seq < b.seq; });
  return out;
}

ProcessTrace read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(fmt::format("cannot read {}: {}", path, strerror(errno)));
  std::ostringstream contents;
  contents << in.rdbuf();
  return parse_trace(contents.str(), path);
}

}  // namespace cuaudit
