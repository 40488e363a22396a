// Compaction of a long run's traces while the program runs (watch mode, --trace-compact-bytes;
// docs/LONG_RUNNING.md): what a run keeps on disk grows with what is live and the number of sites,
// not with time.
//
// A trace that grew by the threshold since its last compaction is read whole (its compacted
// beginning and the rest), replayed once, and its beginning up to the last whole chunk is written
// anew as compacted-<pid>.cutrace (compacted_file.h): every record but the allocations that were
// released, with their releases (paired_events.h), and all but a few thousand memory samples per
// device. The trace is then read as that file followed by the trace from the cut
// (trace_bytes.h's bytes_of_trace). The injection goes on appending to the trace as before; the
// bytes before the previous compaction's cut are given back to the file system by punching a hole
// (fallocate), one compaction late, so that a reader that opened the previous compacted file still
// finds every byte it goes on from.
#pragma once

#include <cstdint>
#include <string>

namespace cuaudit {

struct CompactionOutcome {
  bool compacted = false;
  std::string skipped;           // why not, when not
  uint64_t cut = 0;              // where the trace now goes on
  uint64_t compacted_bytes = 0;  // compacted-<pid>.cutrace's size
  uint64_t left_out = 0;         // allocations and releases left out this time
  uint64_t punched_bytes = 0;    // given back to the file system this time
};

// Compacts the trace at `trace_path` (trace-<pid>.cutrace) up to its last whole chunk. Throws
// TraceError for a file that is not a trace; a compaction that cannot be written says why in
// `skipped` and leaves the trace as it was.
CompactionOutcome compact_trace(const std::string& trace_path);

// How many bytes of `trace_path` follow its compacted beginning (all of it, never compacted).
uint64_t bytes_since_compaction(const std::string& trace_path);

// Compacts each trace of the run directory that grew by `threshold` bytes or more since its last
// compaction (a process still running; one that began to exit is left whole). Returns how many.
size_t compact_grown_traces(const std::string& run_dir, uint64_t threshold);

}  // namespace cuaudit
