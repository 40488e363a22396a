#include "run_integrity.h"

#include <algorithm>
#include <map>
#include <utility>

#include <sys/stat.h>

#include <fmt/format.h>

namespace cuaudit {
namespace {
std::optional<uint64_t> pid_in_file_name(const std::string& path) {
  return pid_in_entry_name(path.substr(path.rfind('/') + 1), run_dir::Trace);
}

// The first of `kept` that is the same process as `t`: the same pid, and the same start time or a
// chunk of events byte for byte (a copy whose process record was changed or lost; a pid reused
// later is another process, whose events differ at least in their times).
const TraceFile* same_process(const std::vector<TraceFile>& kept, const TraceFile& t) {
  for (const TraceFile& k : kept) {
    const ProcessTrace &a = k.metadata(), &b = t.metadata();
    if (a.pid != b.pid) continue;
    if (a.start_realtime_ns == b.start_realtime_ns) return &k;
    const auto& x = k.fingerprints();
    const auto& y = t.fingerprints();
    for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
      if (x[i] == y[j]) return &k;
      x[i] < y[j] ? ++i : ++j;
    }
  }
  return nullptr;
}
}  // namespace

// Two traces of one process (a copy or a link of a trace; a pid reused over a long run starts later
// and shares no events) would count everything it did twice: one is read, the one whose name is
// its pid. A trace named for another pid than its header's is damage too. Both are said, and the
// report is incomplete.
void drop_repeated_processes(std::vector<TraceFile>& loaded, report::Report& report) {
  std::stable_partition(loaded.begin(), loaded.end(),
                        [](const TraceFile& f) { return pid_in_file_name(f.metadata().file) == f.metadata().pid; });
  std::vector<TraceFile> kept;
  kept.reserve(loaded.size());
  for (auto it = loaded.begin(); it != loaded.end(); ++it) {
    const ProcessTrace& t = it->metadata();
    if (const TraceFile* first = same_process(kept, *it)) {
      report.notes.push_back(fmt::format("{} is a second trace of process {} (a copy or a link of {}); it was not read",
                                         t.file, t.pid, first->metadata().file));
      report.incomplete = true;
      continue;
    }
    if (const std::optional<uint64_t> named = pid_in_file_name(t.file); named && *named != t.pid) {
      it->metadata().problems.push_back(fmt::format(
          "the file is named for process {} but holds the trace of process {} (renamed or copied)", *named, t.pid));
    }
    kept.push_back(std::move(*it));
  }
  loaded = std::move(kept);
}

// Damage that only the whole trace shows (run_integrity.h). Exit processing always writes an end
// record (_exit an exit-call record).
void note_missing_records(const TraceFile& file, ProcessTrace& trace, const std::optional<RunInfo>& run,
                          bool snapshot) {
  // (A forked child whose first event is a crash has records but no process record: it could not
  // describe itself from the signal handler.)
  if (file.record_count() == 0 && !snapshot) {
    trace.problems.push_back(
        "the trace holds nothing but its header: it was cut right after it was opened (the process was killed at "
        "once) or damaged");
  }
  // (A process the injection could not subscribe in stops recording at once: no end record.)
  if (!snapshot && trace.tracked && run && run->pid == trace.pid && run->exit_code && !trace.reached_exit &&
      !trace.exit_called) {
    trace.problems.push_back(fmt::format(
        "the launcher saw the process exit with status {}, which always writes an end record, but its trace has none: "
        "the trace was cut (at a chunk boundary) or damaged after it was written; what came after its last complete "
        "chunk is missing",
        *run->exit_code));
  }
  // The launcher noted each trace's size when the run ended: a shorter file was cut since.
  const auto noted = run ? run->trace_bytes.find(trace.pid) : std::map<uint64_t, uint64_t>::const_iterator{};
  struct stat st;
  if (!snapshot && run && noted != run->trace_bytes.end() && stat(trace.file.c_str(), &st) == 0 &&
      static_cast<uint64_t>(st.st_size) != noted->second) {
    trace.problems.push_back(fmt::format(
        "the trace is {} bytes, {} when the run ended: it was {} since (a copy or an upload cut short, or a "
        "process writing into a finished run); the report covers what the file holds now",
        st.st_size, noted->second, static_cast<uint64_t>(st.st_size) < noted->second ? "cut" : "written to"));
  }
  const ProcessTrace::RecordCounts& counts = trace.record_counts;
  if (!snapshot && counts.unrecorded_stacks) {
    trace.problems.push_back(fmt::format(
        "{} event(s) name {} stack(s) the trace never recorded, where the writer records each before its first use: "
        "chunks of another trace were added, or the chunks that recorded them are lost",
        counts.unrecorded_stack_events, counts.unrecorded_stacks));
  }
  if (counts.process_records > 1) {
    trace.problems.push_back(fmt::format(
        "the trace holds {} process records, where the writer makes one: chunks of another process's trace were added "
        "to it",
        counts.process_records));
  } else if (!snapshot && counts.process_records == 0 && counts.program_events) {
    trace.problems.push_back(
        "the trace has events but no process record, which the writer puts in its first chunk: that chunk is "
        "missing (the file was cut at its start or spliced), so its modules and first events are lost");
  }
  // After its end record the writer closes every chunk it writes (version 6 on): a file whose last
  // record is not that mark was cut while the process exited (its static destructors' releases).
  if (!snapshot && trace.reached_exit && trace.ends_closed == false) {
    trace.problems.push_back(
        "the trace was cut after the process began to exit (its last chunk is not the writer's closing mark): "
        "what it did while exiting (static destructors' releases, other threads' last events) may be missing");
  }
}

}  // namespace cuaudit
