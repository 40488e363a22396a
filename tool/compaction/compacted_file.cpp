#include "compacted_file.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "compact_event.h"
#include "record_parser.h"
#include "trace_bytes.h"

namespace cuaudit {

using namespace cuaudit::trace;

namespace {

constexpr size_t kSampleChunkBytes = 64 * 1024;

// The seq every record with one carries right after its header.
uint64_t record_seq(const char* record) { return load_unaligned<uint64_t>(record + sizeof(RecordHeader)); }

bool is_sample(uint16_t type) {
  return type == static_cast<uint16_t>(RecordType::MemorySample) ||
         type == static_cast<uint16_t>(RecordType::DeviceState);
}

// Records kept only with the allocation or release their seq names.
bool kept_by_seq(uint16_t type) {
  switch (static_cast<RecordType>(type)) {
    case RecordType::Alloc:
    case RecordType::Free:
    case RecordType::PoolBlock:
    case RecordType::AllocPython:  // the seq of the allocation it belongs to
      return true;
    default:
      return false;
  }
}

// A kept allocation or release, compact again where it can follow on from the one written before it
// in this chunk (the events between them are gone), else as a full record.
void append_event(ApiEventRecord& e, bool alloc, CompactEventState& written, std::string& out) {
  uint8_t compact[kMaxCompactEventBytes];
  if (const size_t n = encode_compact_event(written, alloc, e, compact)) {
    out.append(reinterpret_cast<const char*>(compact), n);
    return;
  }
  e.header = alloc ? header_for<AllocRecord>(sizeof(AllocRecord)) : header_for<FreeRecord>(sizeof(FreeRecord));
  out.append(reinterpret_cast<const char*>(&e), sizeof e);
}

// What one chunk's records become: appended to `out`. False when a record is malformed (the rest of
// the chunk is dropped, as the reader drops it).
bool compact_records(const char* data, size_t size, uint32_t tid, const CompactedFileInput& in,
                     std::unordered_map<uint32_t, CompactEventState>& compact, SampleThinning& samples,
                     std::string& out) {
  CompactEventState written;  // the chunk written starts afresh, as the writer's chunks do
  for (size_t r = 0; r < size;) {
    if (size - r < sizeof(RecordHeader)) return false;
    const auto h = load_unaligned<RecordHeader>(data + r);
    if (h.size < sizeof(RecordHeader) || h.size > size - r) return false;
    const char* record = data + r;
    r += h.size;
    if (h.type == static_cast<uint16_t>(RecordType::Compaction)) continue;  // the new one replaces it
    if (h.type == static_cast<uint16_t>(RecordType::CompactEvent)) {
      ApiEventRecord e;
      bool alloc = false;
      if (!decode_compact_event(compact[tid], h, record + sizeof h, h.size - sizeof h, tid, e, alloc)) {
        compact.erase(tid);  // undecodable, as the reader counts it: what follows on from it too
        continue;
      }
      if (in.keep(e.seq)) append_event(e, alloc, written, out);
      continue;
    }
    if (is_sample(h.type)) {
      samples.add(record, h.size);
      continue;
    }
    if (kept_by_seq(h.type) && (h.size < sizeof(RecordHeader) + 8 || !in.keep(record_seq(record)))) continue;
    out.append(record, h.size);
  }
  return true;
}

}  // namespace

void SampleThinning::add(const char* record, size_t size) {
  const auto h = load_unaligned<RecordHeader>(record);
  const size_t device_at = h.type == static_cast<uint16_t>(RecordType::MemorySample)
                               ? offsetof(MemorySampleRecord, device)
                               : offsetof(DeviceStateRecord, device);
  if (size < device_at + sizeof(int32_t)) return;
  auto& records = by_device_[{h.type, load_unaligned<int32_t>(record + device_at)}];
  records.emplace_back(record, size);
  if (records.size() >= 2 * limit_) thin(records);
}

// Whether of two neighbours `a` (the earlier) stays rather than `b`.
bool SampleThinning::keep_first(const std::string& a, const std::string& b) {
  const auto h = load_unaligned<RecordHeader>(a.data());
  if (h.type == static_cast<uint16_t>(RecordType::MemorySample)) {
    return load_unaligned<MemorySampleRecord>(a.data()).free_bytes <
           load_unaligned<MemorySampleRecord>(b.data()).free_bytes;
  }
  auto failed = [](const std::string& s) {
    return (load_unaligned<DeviceStateRecord>(s.data()).flags & kStateAtFailedAllocation) != 0;
  };
  return failed(a) && !failed(b);
}

void SampleThinning::thin(std::vector<std::string>& records) {
  size_t kept = 0;
  for (size_t i = 0; i + 1 < records.size(); i += 2)
    records[kept++] = std::move(keep_first(records[i], records[i + 1]) ? records[i] : records[i + 1]);
  if (records.size() % 2) records[kept++] = std::move(records.back());
  left_out_ += records.size() - kept;
  records.resize(kept);
}

std::vector<std::string> SampleThinning::kept() const {
  std::vector<std::string> out;
  for (const auto& [key, records] : by_device_) out.insert(out.end(), records.begin(), records.end());
  return out;
}

std::string sealed_chunk(const std::string& payload, uint32_t tid, uint32_t version, uint64_t pid, uint64_t nonce) {
  const ChunkHeader h{kChunkMagic, static_cast<uint32_t>(payload.size()), tid,
                      chunk_checksum(payload.data(), payload.size(), chunk_seal(version, pid, nonce, tid))};
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  return out + payload;
}

CompactedFile compact_chunks(const CompactedFileInput& in) {
  CompactedFile result;
  std::unordered_map<uint32_t, CompactEventState> compact;  // each thread's last event, as the reader keeps it
  SampleThinning samples(in.samples_per_device);
  TraceBytes& bytes = *in.bytes;
  const auto header = load_unaligned<FileHeader>(bytes.read(0, sizeof(FileHeader)));
  std::string kept;
  for (size_t pos = header.header_size; in.end - pos >= sizeof(ChunkHeader);) {
    const auto chunk = load_unaligned<ChunkHeader>(bytes.read(pos, sizeof(ChunkHeader)));
    if (chunk.magic != kChunkMagic || chunk.payload_bytes > in.end - pos - sizeof chunk) break;
    const std::string data(bytes.read(pos + sizeof chunk, chunk.payload_bytes), chunk.payload_bytes);
    pos += sizeof chunk + chunk.payload_bytes;
    if (chunk_checksum(data.data(), data.size(), chunk_seal(in.version, in.pid, in.nonce, chunk.tid)) !=
        chunk.checksum) {
      ++result.damaged_chunks;
      compact.erase(chunk.tid);
      continue;
    }
    kept.clear();
    if (!compact_records(data.data(), data.size(), chunk.tid, in, compact, samples, kept)) compact.erase(chunk.tid);
    if (!kept.empty()) result.chunks += sealed_chunk(kept, chunk.tid, in.version, in.pid, in.nonce);
  }
  // Samples and device states are not merged by seq with the events (the reader sorts them): a few
  // chunks of their own, at the end.
  std::string payload;
  for (const std::string& record : samples.kept()) {
    if (payload.size() + record.size() > kSampleChunkBytes) {
      result.chunks += sealed_chunk(payload, 0, in.version, in.pid, in.nonce);
      payload.clear();
    }
    payload += record;
  }
  if (!payload.empty()) result.chunks += sealed_chunk(payload, 0, in.version, in.pid, in.nonce);
  result.samples_left_out = samples.left_out();
  return result;
}

}  // namespace cuaudit
