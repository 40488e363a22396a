// Reads trace-<pid>.cutrace files written by the injection (the format: common/trace_format.h).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "event_pipe.h"
#include "trace_model.h"

namespace cuaudit {

// A file that is not a cuaudit trace at all, or of a version this build cannot read.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TraceBytes;
class RecordParser;
class ChunkScreen;
class ChunkMarks;

// One trace file, read in two passes so that memory follows what the program held, not how many
// events it made: opening it reads every record once and keeps all but the events (modules,
// stacks, names, memory samples, ...: ProcessTrace with `events` empty); play() then reads the
// events again and hands them on one by one in sequence order, decoding only the chunks whose
// events are due.
class TraceFile {
 public:
  // Throws TraceError for a file that is not a trace, or of a version this build cannot read.
  static TraceFile open(const std::string& path);
  static TraceFile from_bytes(std::string bytes, const std::string& name);
  TraceFile(TraceFile&&) noexcept;
  TraceFile& operator=(TraceFile&&) noexcept;
  ~TraceFile();

  // Everything but the events (samples and device states sorted by seq), and the damage found.
  const ProcessTrace& metadata() const { return metadata_; }
  ProcessTrace& metadata() { return metadata_; }
  size_t event_count() const { return event_count_; }
  // Every complete record read (events or not): 0 for a trace that holds only its header.
  size_t record_count() const { return record_count_; }
  // The content hashes of the chunks that held events, sorted: a trace that shares one with
  // another trace of the same process is a copy of it (drop_repeated_processes).
  const std::vector<uint64_t>& fingerprints() const { return fingerprints_; }
  // Where the trace file's whole chunks end (a chunk being written, or cut short, after it): where
  // a compaction may cut it (tool/compaction/). An offset in the file itself, past a compacted
  // beginning.
  size_t whole_chunks_end() const;
  size_t whole_chunks_read() const { return complete_end_; }  // the same, in bytes()
  // The bytes read, for a compaction that copies their records.
  TraceBytes& bytes() const { return *bytes_; }
  uint32_t version() const { return version_; }
  // Every event in sequence order (ties in file order), each complete (Python stacks attached).
  // `timed` (in time order: a framework's history, recorded by its own clock) is merged in by
  // time (TimedMerge): each of its events goes just before the first event of the file that came
  // after it, with the seq of the first memory sample after it.
  // `ahead`: told of the events a few places ahead of the one handed on (EventPipe::Lookahead).
  void play(const std::function<void(const Event&)>& sink, const std::vector<Event>* timed = nullptr,
            const EventPipe::Lookahead* ahead = nullptr) const;
  // The metadata with every event in `events`: for small traces and tests.
  ProcessTrace materialize() const;

 private:
  struct Chunk;
  TraceFile(std::unique_ptr<TraceBytes> bytes, const std::string& name);
  void index(const std::string& name);
  // Indexes the chunk at `pos`: returns where the next one starts, or the file's size when the
  // reading ends there (a cut or damaged file, said in the problems).
  size_t index_chunk(size_t pos, RecordParser& parser, uint32_t version, ChunkScreen& screen);
  // The chunk just read (its records at `data`), kept for the merge if it is the process's own and
  // holds events; else what it added is taken back out.
  void keep_chunk(Chunk info, const char* data, const ChunkMarks& marks, RecordParser& parser, ChunkScreen& screen);
  void attach_python_stacks(std::vector<Event>& events) const;
  // play()'s producer: decodes the chunks as the merge reaches them and hands their events on in order.
  void merge_events(const std::function<void(const Event&)>& sink, const std::vector<Event>* timed) const;

  std::unique_ptr<TraceBytes> bytes_;
  ProcessTrace metadata_;
  std::vector<Chunk> chunks_;  // chunks holding events, by their first seq
  size_t event_count_ = 0;
  size_t record_count_ = 0;
  std::vector<uint64_t> fingerprints_;
  // The record types that made events in the first pass: the second parses only those (learned,
  // not listed, so a new event record cannot be forgotten there).
  std::vector<bool> event_types_ = std::vector<bool>(size_t{1} << 16, false);
  size_t complete_end_ = 0;            // after the last whole chunk (in bytes_, not in the file)
  uint32_t version_ = 0;               // the file's trace format version (the reader maps older records)
  uint64_t file_pid_ = 0, nonce_ = 0;  // the file header's pid and (version 7 on) FileIdentity
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> alloc_python_;  // seq -> (Python stack, launches)
};

// Places events recorded by another clock (a framework's history, in time order) among a trace's
// events and samples: each goes just before the first event that came after it in time, with the
// seq of the first memory sample after it, so that the replay shows it the samples taken before it.
class TimedMerge {
 public:
  TimedMerge(const std::vector<Event>* timed, const std::vector<MemorySample>& samples)
      : timed_(timed), samples_(samples) {}
  // Hands on the timed events that came before `next` (all that are left when `next` is null).
  void before(const Event* next, const std::function<void(const Event&)>& sink);
  // `seq` was handed on: nothing placed later may come before it.
  void handed_on(uint64_t seq) { last_seq_ = std::max(last_seq_, seq); }

 private:
  const std::vector<Event>* timed_;
  const std::vector<MemorySample>& samples_;
  size_t next_ = 0;
  uint64_t last_seq_ = 0;
};

// `trace`'s events with `timed` merged in as TraceFile::play merges them (for the tests).
std::vector<Event> merge_by_time(const ProcessTrace& trace, const std::vector<Event>& timed);

// Damage inside an otherwise valid trace (a truncated last chunk, an unknown API id) is not an
// error: what could be read is returned, and the damage is described in ProcessTrace::problems.
ProcessTrace read_trace_file(const std::string& path);
ProcessTrace parse_trace(const std::string& bytes, const std::string& name);

}  // namespace cuaudit
