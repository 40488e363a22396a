// Damage a recording never makes, seen across a run directory or a whole trace: a second trace
// of one process (a copy or a link), a trace named for another pid, a trace with nothing but its
// header, a process the launcher saw exit whose trace has no end record. Each is said and makes
// the report incomplete (docs/EXIT_CODES.md, 123).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report_model.h"
#include "run_dir.h"
#include "trace_reader.h"

namespace cuaudit {

// Keeps one trace of each process (same pid and start time; a pid reused later is another process),
// the one whose name is its pid; notes the others in `report`.
void drop_repeated_processes(std::vector<TraceFile>& loaded, report::Report& report);

// Adds to the trace's problems what only the whole trace shows: a header alone, no end record though
// the launcher saw the process exit, no closing mark, another size than run.json noted, no process
// record or two, events naming stacks never recorded. `snapshot`: the process may still be running
// (a snapshot, or one the program left running), and its unflushed buffers hold what is not there yet.
void note_missing_records(const TraceFile& file, ProcessTrace& trace, const std::optional<RunInfo>& run, bool snapshot);

}  // namespace cuaudit
