// What the report says of one process beside its findings: how it ended (the launcher's account,
// or the trace's own facts), what its replay counted, and the notes on what the trace could not hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "replay.h"
#include "report_model.h"
#include "run_dir.h"
#include "trace_model.h"

namespace cuaudit {

// The launcher's account of how the process it started ended.
void apply_run_info(const RunInfo& run, report::Process& p);

// What cuaudit did with a stop it received while the program ran (--save and temporary runs alike).
std::optional<std::string> stop_note(const RunInfo& run);

// The last of the facts that say how a process ended (a signal, an exit call, exit processing);
// none: it did not end (a snapshot) or ended without a trace of it (SIGKILL).
const Event* ending_fact(const ProcessTrace& trace);

// `snapshot`: the run is still going (a process without an ending fact is running, not ended);
// `last_ns`: the time of the run's last event, for how long a running process has run.
report::Process describe_process(const ProcessTrace& trace, const std::optional<RunInfo>& run, bool snapshot,
                                 uint64_t last_ns, const ReplayResult& r);

}  // namespace cuaudit
