#include "trace_compaction.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "compacted_file.h"
#include "paired_events.h"
#include "record_parser.h"
#include "replay.h"
#include "run_dir.h"
#include "safe_file.h"
#include "trace_bytes.h"
#include "trace_reader.h"

namespace cuaudit {

using namespace cuaudit::trace;

namespace {

constexpr uint64_t kPunchGrain = 4096;  // file system blocks: a hole is punched in whole ones

// Gives the trace's bytes [its first whole block after the header, `cut`) back to the file system.
// Returns the bytes no longer on disk; 0 with nothing to give or where the file system cannot.
uint64_t punch_before(const std::string& trace_path, uint64_t header_size, uint64_t cut) {
  const uint64_t from = (header_size + kPunchGrain - 1) / kPunchGrain * kPunchGrain;
  const uint64_t to = cut / kPunchGrain * kPunchGrain;
  if (to <= from) return 0;
  const int fd = ::open(trace_path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  struct stat before, after;
  const bool measured = fstat(fd, &before) == 0;
  const bool punched = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                                 static_cast<off_t>(to - from)) == 0;
  const uint64_t freed = punched && measured && fstat(fd, &after) == 0 && before.st_blocks > after.st_blocks
                             ? static_cast<uint64_t>(before.st_blocks - after.st_blocks) * 512
                             : 0;
  ::close(fd);
  return freed;
}

CompactionRecord next_record(const ProcessTrace& trace, const PairedEvents& pairs, const CompactedFile& file,
                             uint64_t cut) {
  CompactionRecord r{};
  if (trace.compaction) r = *trace.compaction;
  r.header = header_for<CompactionRecord>(sizeof r);
  r.cut = cut;
  ++r.compactions;
  r.allocations += pairs.paired();
  r.releases += pairs.paired();
  r.samples += file.samples_left_out;
  r.damaged_chunks += file.damaged_chunks;
  r.last_time_ns = std::max(r.last_time_ns, pairs.last_time_ns());
  return r;
}

}  // namespace

CompactionOutcome compact_trace(const std::string& trace_path) {
  CompactionOutcome outcome;
  const TraceFile file = TraceFile::open(trace_path);
  const ProcessTrace& trace = file.metadata();
  const uint64_t previous_cut = trace.compaction ? trace.compaction->cut : 0;
  outcome.cut = file.whole_chunks_end();
  if (trace.reached_exit) {
    outcome.skipped = "the process began to exit";
    return outcome;
  }
  if (file.version() < kFirstSealedVersion) {
    outcome.skipped =
        fmt::format("trace format version {}: only version {} on is compacted", file.version(), kFirstSealedVersion);
    return outcome;
  }
  if (outcome.cut <= previous_cut) {
    outcome.skipped = "nothing new since the last compaction";
    return outcome;
  }
  PairedEvents pairs;
  pair_events(
      trace, [&file](const EventSink& sink) { file.play(sink); }, pairs);
  TraceBytes& bytes = file.bytes();
  const auto header = load_unaligned<FileHeader>(bytes.read(0, sizeof(FileHeader)));
  const uint64_t nonce = load_unaligned<FileIdentity>(bytes.read(sizeof header, sizeof(FileIdentity))).nonce;
  CompactedFileInput in;
  in.bytes = &bytes;
  in.end = file.whole_chunks_read();
  in.version = header.version;
  in.pid = header.pid;
  in.nonce = nonce;
  in.keep = [&pairs](uint64_t seq) { return pairs.kept(seq); };
  const CompactedFile chunks = compact_chunks(in);
  const CompactionRecord record = next_record(trace, pairs, chunks, outcome.cut);
  std::string contents(bytes.read(0, header.header_size), header.header_size);
  contents += sealed_chunk(std::string(reinterpret_cast<const char*>(&record), sizeof record), 0, header.version,
                           header.pid, nonce);
  contents += chunks.chunks;
  bytes.rest();
  std::string error;
  if (!replace_file(compacted_trace_path(trace_path), contents, error)) {
    outcome.skipped = error;
    return outcome;
  }
  outcome.compacted = true;
  outcome.compacted_bytes = contents.size();
  outcome.left_out = 2 * pairs.paired();
  // One compaction late: a reader that opened the previous compacted file goes on from its cut.
  outcome.punched_bytes = punch_before(trace_path, header.header_size, previous_cut);
  return outcome;
}

uint64_t bytes_since_compaction(const std::string& trace_path) {
  std::unique_ptr<TraceBytes> trace = bytes_of_file(trace_path);
  return trace->size() - compacted_beginning(trace_path, *trace).cut;
}

size_t compact_grown_traces(const std::string& run_dir, uint64_t threshold) {
  size_t compacted = 0;
  for (const std::string& path : list_traces(run_dir)) {
    try {
      if (bytes_since_compaction(path) < threshold) continue;
      compacted += compact_trace(path).compacted;
    } catch (const TraceError&) {
      // Not a trace (yet): a process that has only just made its file. Read again next time.
    }
  }
  return compacted;
}

}  // namespace cuaudit
