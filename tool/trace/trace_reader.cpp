#include "trace_reader.h"

#include "safe_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "compact_event.h"
#include "record_parser.h"
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

// Where a trace's bytes come from: a file read piece by piece (a trace larger than memory is
// never read whole), or bytes already in memory (tests, the fuzzer).
class TraceBytes {
 public:
  virtual ~TraceBytes() = default;
  virtual size_t size() const = 0;
  // `n` bytes at `offset` (within size()), valid until the next call.
  virtual const char* read(size_t offset, size_t n) = 0;
  // Not read for a while: a file's descriptor is closed until the next read, so that a run of
  // thousands of processes does not hold one per trace (ulimit -n is often 1024).
  virtual void rest() {}
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
  explicit FileBytes(const std::string& path) : path_(path) {
    std::string error;
    // Regular files only: a trace replaced by a FIFO or a link to /dev/zero must not hang the report.
    if (!open_regular_file(path, fd_, size_, error)) throw TraceError(error);
    struct stat st;
    if (fstat(fd_, &st) == 0) device_ = st.st_dev, inode_ = st.st_ino;
  }
  ~FileBytes() override {
    if (fd_ >= 0) ::close(fd_);
  }
  size_t size() const override { return size_; }
  void rest() override {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  const char* read(size_t offset, size_t n) override {
    buffer_.resize(n);
    size_t done = 0;
    reopen();
    while (fd_ >= 0 && done < n) {
      const ssize_t got = pread(fd_, buffer_.data() + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;  // the file shrank: what is missing reads as zeros, and fails its checksum
      done += static_cast<size_t>(got);
    }
    std::fill(buffer_.begin() + static_cast<std::ptrdiff_t>(done), buffer_.end(), '\0');
    return buffer_.data();
  }

 private:
  // The same file as when it was indexed, or none (its reads are zeros, which fail to parse).
  void reopen() {
    if (fd_ >= 0) return;
    std::string error;
    size_t size = 0;
    if (!open_regular_file(path_, fd_, size, error)) {
      fd_ = -1;
      return;
    }
    struct stat st;
    if (fstat(fd_, &st) != 0 || st.st_dev != device_ || st.st_ino != inode_) rest();
  }

  std::string path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
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
  bytes_->rest();
}
TraceFile::~TraceFile() = default;
TraceFile::TraceFile(TraceFile&&) noexcept = default;
TraceFile& TraceFile::operator=(TraceFile&&) noexcept = default;

TraceFile TraceFile::open(const std::string& path) { return TraceFile(std::make_unique<FileBytes>(path), path); }

TraceFile TraceFile::from_bytes(std::string bytes, const std::string& name) {
  return TraceFile(std::make_unique<MemoryBytes>(std::move(bytes)), name);
}

// What went wrong while indexing, said once at the end.
struct TraceFile::IndexCounts {
  size_t bad_records = 0, damaged_chunks = 0, damaged_bytes = 0, repeated_chunks = 0;
  // Version 1 wrote no checksums: a chunk of a "version 1" file that carries one was written by a
  // later version whose version field was damaged (one bit turns 3 or 5 into 1).
  size_t checksummed_in_v1 = 0;
  // Every complete chunk by its content's hash: where it starts. A chunk written twice (a copy
  // tool's retry, a crafted file) passes its checksum and would be read twice.
  std::unordered_multimap<uint64_t, size_t> seen;
};

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
  // Every version written so far has a 24-byte header: another size would skip (or misread) the
  // first chunks, with their process and modules.
  if (header.header_size != sizeof(FileHeader) || header.header_size > bytes.size()) {
    throw TraceError(fmt::format("{} has a damaged header (its size field says {}, every version writes {})", name,
                                 header.header_size, sizeof(FileHeader)));
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
  ProcessTrace& out = metadata_;
  out.file = name;
  out.pid = header.pid;
  RecordParser parser(out, header.version);
  IndexCounts counts;
  for (size_t pos = header.header_size; pos < bytes_->size();) pos = index_chunk(pos, parser, header.version, counts);
  out.events.shrink_to_fit();
  if (counts.bad_records)
    out.problems.push_back(fmt::format("{} chunk(s) held a malformed record and were cut short", counts.bad_records));
  if (counts.repeated_chunks) {
    out.problems.push_back(fmt::format(
        "{} chunk(s) repeat an earlier chunk byte for byte (the file was copied or written twice); each was read once",
        counts.repeated_chunks));
  }
  if (counts.damaged_chunks) {
    out.problems.push_back(
        fmt::format("{} chunk(s) ({} bytes) failed their checksum (the file was damaged after it "
                    "was written); their records were not read",
                    counts.damaged_chunks, counts.damaged_bytes));
  }
  if (counts.checksummed_in_v1)
    out.problems.push_back(
        fmt::format("the file says trace format version 1, but {} of its chunk(s) carry checksums, "
                    "which version 1 never wrote: its version field is damaged",
                    counts.checksummed_in_v1));
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

size_t TraceFile::index_chunk(size_t pos, RecordParser& parser, uint32_t version, IndexCounts& counts) {
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
  if (version == 1 && chunk.checksum != 0) ++counts.checksummed_in_v1;
  if (!truncated && version >= 2 && chunk_checksum(data, chunk.payload_bytes) != chunk.checksum) {
    ++counts.damaged_chunks;  // its records cannot be trusted: none is read
    counts.damaged_bytes += chunk.payload_bytes;
    parser.lose_chunk(chunk.tid);
    return end;
  }
  if (!truncated && repeats_earlier_chunk(pos, chunk, data, counts)) {
    ++counts.repeated_chunks;
    return end;
  }
  data = bytes.read(payload, end - payload);  // a comparison may have read elsewhere
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
    const auto rh = left >= sizeof(RecordHeader) ? load_unaligned<RecordHeader>(data + r) : RecordHeader{};
    if (truncated && (left < sizeof(RecordHeader) || rh.size > left)) break;  // the record the cut went through
    const size_t events_before = out.events.size();
    if (rh.size < sizeof(RecordHeader) || rh.size > left || !parser.parse(data + r, rh.size)) {
      ++counts.bad_records;
      parser.lose_chunk(chunk.tid);
      break;
    }
    if (out.events.size() > events_before) event_types_[rh.type] = true;
    ++complete;
    r += rh.size;
  }
  info.end = payload + r;
  record_count_ += complete;
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
    return size;
  }
  return payload + chunk.payload_bytes;
}

bool TraceFile::repeats_earlier_chunk(size_t pos, const ChunkHeader& chunk, const char* payload, IndexCounts& counts) {
  // The writer's closing mark is the same chunk each time: a repeat of it is no damage.
  if (chunk.payload_bytes == sizeof(TraceClosedRecord) && is_closing_mark(payload)) return false;
  // The payload read already, and what of the header is not derived from it (the checksum is).
  const uint64_t key = content_hash64(payload, chunk.payload_bytes) ^ (uint64_t{chunk.tid} << 32 | chunk.payload_bytes);
  const auto [first, last] = counts.seen.equal_range(key);
  if (first != last) {  // rare: the whole chunks compared, reading the earlier ones again
    const size_t length = sizeof chunk + chunk.payload_bytes;
    const std::string here(bytes_->read(pos, length), length);
    for (auto it = first; it != last; ++it) {
      if (memcmp(bytes_->read(it->second, length), here.data(), length) == 0) return true;
    }
  }
  counts.seen.emplace(key, pos);
  return false;
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
