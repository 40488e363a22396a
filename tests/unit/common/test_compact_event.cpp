// The compact event encoding (trace version 3): every field survives, what repeats costs nothing,
// and a chunk that follows on from a lost one is counted as damage instead of read wrong.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "api_table.h"
#include "compact_event.h"
#include "trace_reader.h"

using namespace cuaudit;
using namespace cuaudit::trace;

namespace {

constexpr uint32_t kTid = 31;

ApiEventRecord event(uint64_t seq, uint64_t time_ns, uint64_t key, uint64_t bytes, uint64_t stack, Api api) {
  ApiEventRecord r{};
  r.seq = seq;
  r.time_ns = time_ns;
  r.key = key;
  r.bytes = bytes;
  r.stack_id = stack;
  r.tid = kTid;
  r.context_uid = 1;
  r.api = static_cast<uint16_t>(api);
  return r;
}

// Encodes `events` (allocation when the flag says so) as one chunk's payload.
std::string encode_all(const std::vector<std::pair<bool, ApiEventRecord>>& events, CompactEventState& state) {
  std::string out;
  for (const auto& [alloc, r] : events) {
    uint8_t bytes[kMaxCompactEventBytes];
    const size_t n = encode_compact_event(state, alloc, r, bytes);
    REQUIRE(n != 0);
    REQUIRE(n % 8 == 0);
    out.append(reinterpret_cast<const char*>(bytes), n);
  }
  return out;
}

std::string file_of(const std::vector<std::string>& payloads) {
  const FileStart start = file_start(5, 1);
  std::string out(reinterpret_cast<const char*>(&start), sizeof start);
  ProcessInfoRecord process{};  // what every trace starts with
  process.header = header_for<ProcessInfoRecord>(sizeof process);
  process.pid = 5;
  struct {
    StackRecord record;
    uint64_t frame;
  } stack{};  // stack 9, which the events name
  stack.record.header = header_for<StackRecord>(sizeof stack);
  stack.record.id = 9;
  stack.record.depth = 1;
  stack.frame = 0x401000;
  std::vector<std::string> chunks{std::string(reinterpret_cast<const char*>(&process), sizeof process) +
                                  std::string(reinterpret_cast<const char*>(&stack), sizeof stack)};
  chunks.insert(chunks.end(), payloads.begin(), payloads.end());
  for (const std::string& p : chunks) {
    const ChunkHeader c{kChunkMagic, static_cast<uint32_t>(p.size()), kTid,
                        chunk_checksum(p.data(), p.size(), chunk_seal(kTraceVersion, 5, 1, kTid))};
    out.append(reinterpret_cast<const char*>(&c), sizeof c);
    out += p;
  }
  return out;
}

bool same(const ApiEventRecord& a, const ApiEventRecord& b) {
  return a.seq == b.seq && a.time_ns == b.time_ns && a.key == b.key && a.bytes == b.bytes && a.stack_id == b.stack_id &&
         a.tid == b.tid && a.context_uid == b.context_uid && a.device == b.device && a.result == b.result &&
         a.api == b.api && a.call_ns == b.call_ns;
}

}  // namespace

TEST_CASE("compact events: every field of every event comes back") {
  std::mt19937_64 rng(7);
  std::vector<std::pair<bool, ApiEventRecord>> events;
  uint64_t seq = 1, now = 1'000;
  for (int i = 0; i < 5000; ++i) {
    ApiEventRecord r = event(seq += 1 + rng() % 300, now += rng() % 5'000'000, rng(), rng() % 3 ? 4096 : rng(),
                             rng() % 4 ? 0x77 : rng(), rng() % 2 ? Api::cudaMalloc : Api::cudaFreeHost);
    r.context_uid = static_cast<uint32_t>(rng() % 3);
    r.device = static_cast<int32_t>(rng() % 5) - 2;  // kHostDevice and kUnknownDevice too
    r.result = rng() % 10 ? 0 : -static_cast<int32_t>(rng() % 1000);
    r.call_ns = rng() % 3 ? static_cast<uint32_t>(rng()) : 0;
    events.emplace_back(rng() % 2 == 0, r);
  }
  CompactEventState writer;
  const std::string payload = encode_all(events, writer);
  CompactEventState reader;
  size_t pos = 0;
  for (const auto& [alloc, expected] : events) {
    RecordHeader h;
    memcpy(&h, payload.data() + pos, sizeof h);
    ApiEventRecord got;
    bool got_alloc = false;
    REQUIRE(decode_compact_event(reader, h, payload.data() + pos + sizeof h, h.size - sizeof h, kTid, got, got_alloc));
    CHECK(got_alloc == alloc);
    CHECK(same(got, expected));
    pos += h.size;
  }
  CHECK(pos == payload.size());
}

TEST_CASE("compact events: an allocate/release loop costs 16 bytes per event") {
  std::vector<std::pair<bool, ApiEventRecord>> events;
  uint64_t now = 1'000'000'000;
  for (uint64_t i = 0; i < 1000; ++i) {
    ApiEventRecord a = event(2 * i + 1, now += 20'000, 0x7f0000200000, 1 << 20, 0xa11c, Api::cudaMalloc);
    a.call_ns = 9'000;
    ApiEventRecord f = event(2 * i + 2, now += 30'000, 0x7f0000200000, 0, 0xf4ee, Api::cudaFree);
    f.call_ns = 25'000;
    events.emplace_back(true, a);
    events.emplace_back(false, f);
  }
  CompactEventState state;
  const std::string payload = encode_all(events, state);
  // The first two carry their stacks, sizes and context; every later one only seq, time and call time.
  CHECK(payload.size() <= 16 * events.size() + 32);
}

TEST_CASE("compact events: time going back on a thread is left to a full record") {
  CompactEventState state;
  uint8_t out[kMaxCompactEventBytes];
  REQUIRE(encode_compact_event(state, true, event(10, 5'000, 0x10, 8, 1, Api::cudaMalloc), out) != 0);
  CHECK(encode_compact_event(state, false, event(11, 4'000, 0x10, 0, 1, Api::cudaFree), out) == 0);
  CHECK(state.seq == 10);  // unchanged: the next event still follows on from the last one written
}

TEST_CASE("compact events: the reader follows a thread across its chunks, and counts what follows a lost one") {
  CompactEventState writer;
  const std::string first = encode_all({{true, event(1, 100, 0x1000, 64, 9, Api::cudaMalloc)}}, writer);
  // A chunk cut in two by a signal handler: the second half follows on from the first.
  const std::string second = encode_all({{false, event(2, 200, 0x1000, 0, 9, Api::cudaFree)}}, writer);
  const ProcessTrace whole = parse_trace(file_of({first, second}), "whole.cutrace");
  CHECK(whole.problems.empty());
  REQUIRE(whole.events.size() == 2);
  CHECK(whole.events[1].kind == EventKind::Free);
  CHECK(whole.events[1].memory().key == 0x1000);
  CHECK(whole.events[1].memory().tid == kTid);

  std::string file = file_of({first, second});
  // The first chunk of events (after the process record's) fails its checksum: not read.
  file[sizeof(FileStart) + sizeof(ChunkHeader) + sizeof(ProcessInfoRecord) + 32 + sizeof(ChunkHeader) + 10] ^= 0x55;
  const ProcessTrace lost = parse_trace(file, "lost.cutrace");
  CHECK(lost.events.empty());
  REQUIRE(lost.problems.size() == 2);
  CHECK(lost.problems[1].find("1 allocation(s) or release(s) could not be decoded") != std::string::npos);
}
