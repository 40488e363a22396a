#include "chunk_screen.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "trace_bytes.h"

namespace cuaudit {

using namespace cuaudit::trace;

bool ChunkScreen::repeats_earlier(size_t pos, const ChunkHeader& chunk, const char* payload, TraceBytes& bytes) {
  // The writer's closing mark is the same chunk each time: a repeat of it is no damage.
  if (chunk.payload_bytes == sizeof(TraceClosedRecord) && is_closing_mark(payload)) return false;
  // The payload alone: no two chunks the writer makes hold the same records (each has its own
  // sequence numbers, times or first-time facts), whatever thread id their headers carry; a
  // repeat under another id would be read as another thread's.
  last_hash_ = content_hash64(payload, chunk.payload_bytes);
  last_hash_bytes_ = chunk.payload_bytes;
  const uint64_t key = last_hash_ ^ chunk.payload_bytes;
  const auto [first, last] = seen_.equal_range(key);
  if (first != last) {  // rare: the whole payloads compared, reading the earlier ones again
    const std::string here(payload, chunk.payload_bytes);
    for (auto it = first; it != last; ++it) {
      if (memcmp(bytes.read(it->second + sizeof chunk, chunk.payload_bytes), here.data(), here.size()) == 0)
        return true;
    }
  }
  seen_.emplace(key, pos);
  return false;
}

bool ChunkScreen::claim(const ChunkMarks::Added& added, size_t events) {
  const std::vector<uint64_t>& seqs = added.seqs;
  // A forked child's first event comes just before its process record (the event opens the trace):
  // a second of slack.
  constexpr uint64_t kSlackNs = 1'000'000'000;
  const bool early = start_ns_ > kSlackNs && added.earliest_ns < start_ns_ - kSlackNs;
  if (early || std::any_of(seqs.begin(), seqs.end(), [&](uint64_t s) { return seqs_.contains(s); })) {
    ++(early ? early_chunks_ : foreign_chunks_);
    foreign_events_ += events;
    return false;
  }
  for (uint64_t s : seqs) seqs_.insert(s);
  return true;
}

void ChunkScreen::fingerprint(const char* payload, size_t bytes) {
  // The repeat check hashed the whole payload already (a cut chunk's complete records are fewer).
  fingerprints_.push_back(bytes == last_hash_bytes_ ? last_hash_ : content_hash64(payload, bytes));
}

std::vector<uint64_t> ChunkScreen::fingerprints() && {
  std::sort(fingerprints_.begin(), fingerprints_.end());
  return std::move(fingerprints_);
}

void ChunkScreen::count(const std::vector<Event>& events, const ProcessTrace& trace) {
  uint64_t known = kNoStack;  // the last stack found: events in a row mostly share theirs
  for (const Event& e : events) {
    program_events_ += e.kind != EventKind::Signal && e.kind != EventKind::ExitCall && e.kind != EventKind::ProcessEnd;
    if (e.stack_id == kNoStack || e.stack_id == known) continue;
    if (trace.stacks.count(e.stack_id)) {
      known = e.stack_id;
    } else {
      ++unseen_stacks_[e.stack_id];
    }
  }
}

void ChunkScreen::say(ProcessTrace& trace) const {
  std::vector<std::string>& problems = trace.problems;
  if (bad_records)
    problems.push_back(fmt::format("{} chunk(s) held a malformed record and were cut short", bad_records));
  if (repeated_chunks) {
    problems.push_back(fmt::format(
        "{} chunk(s) repeat an earlier chunk's records byte for byte (the file was copied or written twice, or a "
        "chunk again under another thread id); each was read once",
        repeated_chunks));
  }
  if (damaged_chunks) {
    problems.push_back(
        fmt::format("{} chunk(s) ({} bytes) failed their checksum (the file was damaged after it "
                    "was written); their records were not read",
                    damaged_chunks, damaged_bytes));
  }
  if (checksummed_in_v1)
    problems.push_back(
        fmt::format("the file says trace format version 1, but {} of its chunk(s) carry checksums, "
                    "which version 1 never wrote: its version field is damaged",
                    checksummed_in_v1));
  if (foreign_chunks_ || early_chunks_) {
    problems.push_back(fmt::format(
        "{} chunk(s) ({} event(s)) are not the process's own and were not read: {} carry sequence numbers already "
        "read, which the process never writes twice (a chunk written again under another thread id, or one of "
        "another trace), {} began before the process did (a chunk of another trace)",
        foreign_chunks_ + early_chunks_, foreign_events_, foreign_chunks_, early_chunks_));
  }
  if (seqs_.full()) {
    problems.push_back(
        "the trace's sequence numbers are too scattered to check for repeats (no process writes them so): it is "
        "damaged, and chunks repeated in it may have been read twice");
  }
  ProcessTrace::RecordCounts& counts = trace.record_counts;
  counts.process_records = process_records;
  counts.program_events = program_events_;
  for (const auto& [id, events] : unseen_stacks_) {
    if (!trace.stacks.count(id)) ++counts.unrecorded_stacks, counts.unrecorded_stack_events += events;
  }
}

ChunkMarks::Added ChunkMarks::added(const ProcessTrace& t) const {
  Added out;
  out.seqs.reserve(t.events.size());
  const auto take = [&](uint64_t seq, uint64_t ns) {
    out.seqs.push_back(seq);
    if (ns) out.earliest_ns = std::min(out.earliest_ns, ns);  // a graph's change has no time
  };
  for (const Event& e : t.events) take(e.seq, e.time_ns);
  if (t.samples_thinned == thinned_ && t.samples.size() >= samples_) {
    for (size_t i = samples_; i < t.samples.size(); ++i) take(t.samples[i].seq, t.samples[i].time_ns);
  }
  for (size_t i = states_; i < t.device_states.size(); ++i) take(t.device_states[i].seq, t.device_states[i].time_ns);
  return out;
}

void ChunkMarks::undo(ProcessTrace& t) const {
  t.events.clear();
  if (t.samples_thinned == thinned_ && t.samples.size() >= samples_) t.samples.resize(samples_);
  t.device_states.resize(std::min(states_, t.device_states.size()));
  t.shared_memory.resize(std::min(shared_, t.shared_memory.size()));
}

}  // namespace cuaudit
