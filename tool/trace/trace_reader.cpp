#include "trace_reader.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "chunk_screen.h"
#include "compact_event.h"
#include "record_parser.h"
#include "trace_bytes.h"
#include "trace_format.h"

namespace cuaudit {

using namespace cuaudit::trace;

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
  bytes_->rest();
}
TraceFile::~TraceFile() = default;
TraceFile::TraceFile(TraceFile&&) noexcept = default;
TraceFile& TraceFile::operator=(TraceFile&&) noexcept = default;

size_t TraceFile::whole_chunks_end() const { return bytes_->trace_offset(complete_end_); }

TraceFile TraceFile::open(const std::string& path) { return TraceFile(bytes_of_trace(path), path); }

TraceFile TraceFile::from_bytes(std::string bytes, const std::string& name) {
  return TraceFile(bytes_in_memory(std::move(bytes)), name);
}

namespace {

FileHeader read_file_header(TraceBytes& bytes, const std::string& name) {
  if (bytes.size() < sizeof(FileHeader) ||
      memcmp(bytes.read(0, sizeof(FileHeader)), kFileMagic, sizeof kFileMagic) != 0) {
    throw TraceError(
        fmt::format("{} is not a cuaudit trace (no CUAUDTRC header); give `cuaudit report` "
                    "the directory a `cuaudit --save DIR` run wrote",
                    name));
  }
  const auto header = load_unaligned<FileHeader>(bytes.read(0, sizeof(FileHeader)));
  if (header.version < kOldestReadableVersion || header.version > kTraceVersion) {
    throw TraceError(
        fmt::format("{} has trace format version {}, this cuaudit reads version {}; analyze it "
                    "with the cuaudit that recorded it",
                    name, header.version, kTraceVersion));
  }
  // Each version's header has one size: another would skip (or misread) the first chunks, with
  // their process and modules.
  if (header.header_size != file_header_size(header.version) || header.header_size > bytes.size()) {
    throw TraceError(fmt::format("{} has a damaged header (its size field says {}, version {} writes {})", name,
                                 header.header_size, header.version, file_header_size(header.version)));
  }
  return header;
}

// What the parser could not read, as the trace's problems.
void note_parse_problems(const RecordParser& parser, ProcessTrace& out) {
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
}

}  // namespace

// Pass 1: every record is read once; what is not an event is kept (modules, stacks, names, memory
// samples, ...), events are only counted per chunk, for the merge.
void TraceFile::index(const std::string& name) {
  const FileHeader header = read_file_header(*bytes_, name);
  version_ = header.version;
  complete_end_ = header.header_size;
  file_pid_ = header.pid;
  if (header.version >= kFirstSealedVersion)
    nonce_ = load_unaligned<FileIdentity>(bytes_->read(sizeof header, sizeof(FileIdentity))).nonce;
  ProcessTrace& out = metadata_;
  out.file = name;
  out.pid = header.pid;
  RecordParser parser(out, header.version);
  ChunkScreen screen;
  for (size_t pos = header.header_size; pos < bytes_->size();) pos = index_chunk(pos, parser, header.version, screen);
  out.events.shrink_to_fit();
  screen.say(out);
  fingerprints_ = std::move(screen).fingerprints();
  note_parse_problems(parser, out);
  alloc_python_ = parser.take_alloc_python();
  std::stable_sort(out.samples.begin(), out.samples.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.seq < b.seq; });
  std::stable_sort(out.device_states.begin(), out.device_states.end(),
                   [](const DeviceState& a, const DeviceState& b) { return a.seq < b.seq; });
  std::stable_sort(chunks_.begin(), chunks_.end(), [](const Chunk& a, const Chunk& b) {
    return std::tie(a.first_seq, a.file_index) < std::tie(b.first_seq, b.file_index);
  });
}

size_t TraceFile::index_chunk(size_t pos, RecordParser& parser, uint32_t version, ChunkScreen& screen) {
  TraceBytes& bytes = *bytes_;
  ProcessTrace& out = metadata_;
  const size_t size = bytes.size();
  if (size - pos < sizeof(ChunkHeader)) {
    out.cut_short_problem = out.problems.size();
    out.problems.push_back(
        fmt::format("the trace ends inside a chunk header ({} stray bytes at the end): "
                    "the process was probably killed while writing",
                    size - pos));
    return size;
  }
  const auto chunk = load_unaligned<ChunkHeader>(bytes.read(pos, sizeof(ChunkHeader)));
  if (chunk.magic != kChunkMagic) {
    out.problems.push_back(
        fmt::format("damaged chunk at offset {}; the {} bytes after it were not read", pos, size - pos));
    return size;
  }
  const size_t payload = pos + sizeof chunk;
  // A chunk cut short (the process was killed while writing it) still holds complete records.
  const bool truncated = chunk.payload_bytes > size - payload;
  const size_t end = truncated ? size : payload + chunk.payload_bytes;
  const char* data = bytes.read(payload, end - payload);
  if (version == 1 && chunk.checksum != 0) ++screen.checksummed_in_v1;
  const uint64_t seal = chunk_seal(version, file_pid_, nonce_, chunk.tid);
  if (!truncated && version >= 2 && chunk_checksum(data, chunk.payload_bytes, seal) != chunk.checksum) {
    ++screen.damaged_chunks;  // its records cannot be trusted: none is read
    screen.damaged_bytes += chunk.payload_bytes;
    parser.lose_chunk(chunk.tid);
    complete_end_ = end;
    return end;
  }
  screen.start_chunk();
  if (!truncated && screen.repeats_earlier(pos, chunk, data, bytes)) {
    ++screen.repeated_chunks;
    complete_end_ = end;
    return end;
  }
  data = bytes.read(payload, end - payload);  // a comparison may have read elsewhere
  Chunk info;
  info.begin = payload;
  info.tid = chunk.tid;
  info.file_index = chunks_.size();
  info.compact = parser.compact_state(chunk.tid);
  size_t complete = 0;
  const ChunkMarks marks(out);
  parser.start_chunk(chunk.tid);
  size_t r = 0;
  while (r < end - payload) {
    const size_t left = end - payload - r;
    const auto rh = left >= sizeof(RecordHeader) ? load_unaligned<RecordHeader>(data + r) : RecordHeader{};
    if (truncated && (left < sizeof(RecordHeader) || rh.size > left)) break;  // the record the cut went through
    const size_t events_before = out.events.size();
    if (rh.size < sizeof(RecordHeader) || rh.size > left || !parser.parse(data + r, rh.size)) {
      ++screen.bad_records;
      parser.lose_chunk(chunk.tid);
      break;
    }
    if (out.events.size() > events_before) event_types_[rh.type] = true;
    if (rh.type == static_cast<uint16_t>(RecordType::ProcessInfo) && ++screen.process_records == 1)
      screen.set_process_start(out.start_monotonic_ns);
    ++complete;
    r += rh.size;
  }
  info.end = payload + r;
  record_count_ += complete;
  keep_chunk(info, data, marks, parser, screen);
  if (truncated) {
    out.cut_short_problem = out.problems.size();
    out.problems.push_back(
        fmt::format("the last chunk is truncated ({} of {} bytes): the process was probably killed while writing; "
                    "its {} complete record(s) were read, the rest is lost",
                    size - payload, chunk.payload_bytes, complete));
    return size;
  }
  complete_end_ = payload + chunk.payload_bytes;
  return complete_end_;
}

void TraceFile::keep_chunk(Chunk info, const char* data, const ChunkMarks& marks, RecordParser& parser,
                           ChunkScreen& screen) {
  ProcessTrace& out = metadata_;
  if (!screen.claim(marks.added(out), out.events.size())) {  // as if never read
    marks.undo(out);
    parser.set_compact_state(info.tid, info.compact);
    return;
  }
  if (out.events.empty()) return;
  screen.fingerprint(data, info.end - info.begin);
  screen.count(out.events, out);  // counted, not kept: the merge reads them again (pass 2)
  info.first_seq = UINT64_MAX;
  for (const Event& e : out.events) info.first_seq = std::min(info.first_seq, e.seq);
  event_count_ += out.events.size();
  out.events.clear();
  chunks_.push_back(info);
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

// Decoding and merging on a thread of their own, the replay (`sink`) on this one: a long trace's
// report uses two cores (event_pipe.h).
void TraceFile::play(const std::function<void(const Event&)>& sink, const std::vector<Event>* timed,
                     const EventPipe::Lookahead* ahead) const {
  play_through_pipe([&](EventPipe& pipe) { merge_events([&](const Event& e) { pipe.put(e); }, timed); }, sink, ahead);
}

void TraceFile::merge_events(const std::function<void(const Event&)>& sink, const std::vector<Event>* timed) const {
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
  // Event lists of chunks handed on, kept for the next chunks: a fresh list grew from nothing at
  // every chunk, and its pages, given back to the kernel and faulted in again, were a third of the
  // decoding thread's time on a 100,000,000-event trace.
  std::vector<std::vector<Event>> spare;
  auto load_chunk = [&](const Chunk& c) {
    scratch.events.clear();
    if (!spare.empty()) {
      scratch.events.swap(spare.back());
      spare.pop_back();
    }
    RecordParser builder(scratch, version_);
    builder.start_chunk(c.tid);
    builder.set_compact_state(c.tid, c.compact);
    const char* data = bytes_->read(c.begin, c.end - c.begin);
    for (size_t r = 0; r < c.end - c.begin;) {
      const auto rh = load_unaligned<RecordHeader>(data + r);
      if (event_types_[rh.type]) builder.parse(data + r, rh.size);
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
      chunk.events.clear();
      spare.push_back(std::move(chunk.events));
      loaded[slot].reset();
      free_slots.push_back(slot);
    }
  }
  merge.before(nullptr, sink);
  bytes_->rest();
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
