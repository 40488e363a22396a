// Whether each chunk of a trace is the process's own, decided as the trace is indexed, and what
// was set aside, said once at the end (the reliability review of 2026-12-04, F6: a chunk repeated
// under another thread id, or one of another run spliced in, was read as the process's own).
//
// - A chunk that repeats an earlier one byte for byte is read once.
// - A chunk whose records carry a sequence number already read is not the process's (the writer
//   numbers every event, sample and device state from one counter): it is not read.
// - A trace holds one process record, in its first chunk: none means that chunk is missing, two
//   that another process's chunks were added.
// - The writer records each stack before the first event that names it: events naming a stack the
//   trace never recorded come from another trace (in versions before 7, whose checksums do not say
//   which file a chunk belongs to) or lost the chunk that recorded it.
// The last two are counted here and said by note_missing_records (run_integrity.h), for finished
// traces only: a running process's unflushed buffers may hold those records yet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "seen_sequences.h"
#include "trace_format.h"
#include "trace_model.h"

namespace cuaudit {

class TraceBytes;

// What a chunk added to the trace's lists, so that a chunk set aside can be taken back out: its
// events (all of ProcessTrace::events while a chunk is indexed), samples, device states and
// shared-memory facts.
class ChunkMarks {
 public:
  explicit ChunkMarks(const ProcessTrace& t)
      : samples_(t.samples.size()),
        thinned_(t.samples_thinned),
        states_(t.device_states.size()),
        shared_(t.shared_memory.size()) {}
  // The sequence numbers the chunk's own records took (a shared-memory fact shares its allocation's)
  // and the earliest of their times (UINT64_MAX: none has one), from one walk. Samples merged while
  // the chunk was read (a long run's timeline thinned) are not among them.
  struct Added {
    std::vector<uint64_t> seqs;
    uint64_t earliest_ns = UINT64_MAX;
  };
  Added added(const ProcessTrace& t) const;
  void undo(ProcessTrace& t) const;

 private:
  size_t samples_, thinned_, states_, shared_;
};

class ChunkScreen {
 public:
  // A chunk's reading begins (what was hashed of the one before is forgotten).
  void start_chunk() { last_hash_bytes_ = SIZE_MAX; }
  // Is the chunk at `pos` (its header, and its payload read already) the same bytes as an earlier one?
  bool repeats_earlier(size_t pos, const trace::ChunkHeader& chunk, const char* payload, TraceBytes& bytes);
  // What a chunk added (its sequence numbers and earliest time): true (and the numbers remembered) when none
  // was read before and it began after the process did; else the chunk is set aside (counted with
  // its `events`).
  bool claim(const ChunkMarks::Added& added, size_t events);
  // The process began (its record's monotonic time): a chunk of an earlier time is another's.
  void set_process_start(uint64_t monotonic_ns) { start_ns_ = monotonic_ns; }
  // What the chunk's content hash is (for finding copies of a trace: fingerprints()).
  void fingerprint(const char* payload, size_t bytes);

  // The events of a chunk read: those the program's calls made (not a crash's or an exit's, which a
  // forked child may write before it could describe itself) need a process record, and the stacks
  // they name must be in `trace` by its end.
  void count(const std::vector<Event>& events, const ProcessTrace& trace);
  // Problems found while indexing `trace`, said once at the end (in its problems), and the counts
  // only a finished trace is judged by (its record_counts: run_integrity.cpp says them).
  void say(ProcessTrace& trace) const;
  // The content hashes of the chunks that held events, sorted: two traces that share one are
  // copies of one process's trace.
  std::vector<uint64_t> fingerprints() &&;

  size_t bad_records = 0, damaged_chunks = 0, damaged_bytes = 0, repeated_chunks = 0;
  // Version 1 wrote no checksums: a chunk of a "version 1" file that carries one was written by a
  // later version whose version field was damaged (one bit turns 3 or 5 into 1).
  size_t checksummed_in_v1 = 0;
  size_t process_records = 0;

 private:
  // Every complete chunk by its content's hash: where it starts. A chunk written twice (a copy
  // tool's retry, a crafted file) passes its checksum and would be read twice.
  std::unordered_multimap<uint64_t, size_t> seen_;
  SeenSequences seqs_;
  size_t program_events_ = 0;
  // Stacks events named before any record of them was read (another thread's chunk may hold it),
  // with how many events named each.
  std::unordered_map<uint64_t, size_t> unseen_stacks_;
  size_t foreign_chunks_ = 0, foreign_events_ = 0, early_chunks_ = 0;
  uint64_t start_ns_ = 0;
  std::vector<uint64_t> fingerprints_;
  uint64_t last_hash_ = 0;  // of the payload repeats_earlier saw last, of last_hash_bytes_
  size_t last_hash_bytes_ = SIZE_MAX;
};

}  // namespace cuaudit
