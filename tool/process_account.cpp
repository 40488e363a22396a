#include "process_account.h"

#include <fmt/format.h>

#include "released_memory.h"

namespace cuaudit {
namespace {

// "100": the trace's flush interval in ms, what a process that ends abruptly may not have written.
std::string flush_interval_text(const ProcessTrace& trace) {
  return trace.flush_interval_ms ? std::to_string(trace.flush_interval_ms) : std::string("100");
}

// How a process ended, from the launcher's account (authoritative for the process it started)
// or from the trace's own facts: a fatal signal, an exit call, exit processing, or nothing; in a
// snapshot, a process with none of these is still running.
void describe_end(const ProcessTrace& trace, const std::optional<RunInfo>& run, bool snapshot, uint64_t last_ns,
                  report::Process& p) {
  if (run && run->pid == trace.pid) apply_run_info(*run, p);
  const Event* last = ending_fact(trace);
  if (!last && left_running(run, trace.pid)) {
    p.notes.push_back(fmt::format(
        "still running when the program ended, {:.1f} s after it started (a process it left behind; cuaudit did "
        "not wait for it): what it held then is live, not leaked; `cuaudit report` of the kept run once it has "
        "ended gives its whole account",
        trace.seconds_since_start(last_ns)));
    return;
  }
  if (!last && snapshot) {
    p.notes.push_back(fmt::format(
        "still running when this snapshot was taken, {:.1f} s after it started (events of its last {} ms may not "
        "be written yet): what it holds is live, not leaked",
        trace.seconds_since_start(last_ns), flush_interval_text(trace)));
    return;
  }
  if (!last) {
    if (trace.tracked) {
      p.notes.push_back(fmt::format(
          "the process ended without exit processing and without a signal cuaudit could catch (SIGKILL, or a "
          "handler of its own that ended it): events of its last {} ms may be missing",
          flush_interval_text(trace)));
    }
    return;
  }
  if (last->kind == EventKind::Signal) {
    const int signal = last->signal().signal;
    if (!p.signal && !p.exit_code) p.signal = signal_name(signal);
    p.notes.push_back(
        fmt::format("the process received {}; its trace was written from the signal handler, complete "
                    "up to that moment, and what was live then is reported as leaked",
                    signal_name(signal)));
  } else if (last->kind == EventKind::ExitCall) {
    const ExitFact& exit = last->exit();
    if (!p.signal && !p.exit_code) p.exit_code = exit.status;
    if (exit.how != trace::ExitHow::Exit) {
      p.notes.push_back(fmt::format("the process ended with {}({}), which skips exit processing; the trace is complete",
                                    trace::exit_function_name(exit.how), exit.status));
    }
  }
}

}  // namespace

void apply_run_info(const RunInfo& run, report::Process& p) {
  p.exit_code = run.exit_code;
  if (run.signal) p.signal = signal_name(*run.signal);
}

std::optional<std::string> stop_note(const RunInfo& run) {
  if (run.killed_after_signal) {
    return fmt::format(
        "cuaudit received {} while the program ran and passed it on; when {} came again more than a second later "
        "it killed the program (SIGKILL): what the traces hold is reported",
        signal_name(run.forwarded_signal.value_or(*run.killed_after_signal)), signal_name(*run.killed_after_signal));
  }
  if (run.forwarded_signal) {
    return fmt::format("cuaudit received {} while the program ran and passed it on to the program",
                       signal_name(*run.forwarded_signal));
  }
  return std::nullopt;
}

const Event* ending_fact(const ProcessTrace& trace) {
  const Event* last = nullptr;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::Signal || e.kind == EventKind::ExitCall || e.kind == EventKind::ProcessEnd) last = &e;
  }
  return last;
}

// What a trace compacted while the program ran (watch mode) no longer holds, and what that changes.
void add_compaction_note(const ProcessTrace& trace, const trace::CompactionRecord& c, report::Process& p) {
  p.notes.push_back(fmt::format(
      "its trace was compacted {} time(s) while it ran (--trace-compact-bytes), up to {:.1f} s: {} allocation(s) "
      "released by then were left out with their releases (counted above), and {} memory sample(s); for that time "
      "the growth and churn checks see only the memory still held at a compaction, and a release of memory "
      "released then is judged as one of memory never seen{}",
      c.compactions, trace.seconds_since_start(c.last_time_ns), c.allocations, c.samples,
      c.damaged_chunks ? fmt::format("; {} damaged chunk(s) were not carried over", c.damaged_chunks) : ""));
}

report::Process describe_process(const ProcessTrace& trace, const std::optional<RunInfo>& run, bool snapshot,
                                 uint64_t last_ns, const ReplayResult& r) {
  report::Process p;
  p.pid = trace.pid;
  p.parent_pid = trace.parent_pid;
  p.command = trace.command;
  p.tracked = trace.tracked;
  // A compacted trace no longer holds the pairs it left out; they were made all the same.
  p.allocations = r.allocations + (trace.compaction ? trace.compaction->allocations : 0);
  p.releases = r.releases + (trace.compaction ? trace.compaction->releases : 0);
  for (const auto& [ordinal, device] : trace.devices) p.devices.push_back({ordinal, device.name, device.total_bytes});
  describe_end(trace, run, snapshot, last_ns, p);
  if (last_ns) p.seconds = trace.seconds_since_start(last_ns);
  for (const auto& notice : trace.notices) p.notes.push_back(notice);
  for (const auto& problem : trace.problems)
    p.notes.push_back(fmt::format("damaged trace {}: {}", trace.file, problem));
  if (trace.managed_migrations_dropped) {
    p.notes.push_back(fmt::format(
        "managed memory's migrations: the first {} unified-memory records were kept and {} more only counted; "
        "managed_migration findings judge the kept ones",
        trace.managed_migrations.size(), trace.managed_migrations_dropped));
  }
  if (trace.kernel_spans_dropped) {
    p.notes.push_back(fmt::format(
        "kernels' runs: the first {} were kept and {} more only counted; managed_migration findings name the kernels "
        "of the kept ones",
        trace.kernel_spans.size(), trace.kernel_spans_dropped));
  }
  if (trace.device_heap_calls_dropped) {
    p.notes.push_back(fmt::format(
        "device heap: the first {} device-side malloc/free calls were kept and {} more only counted; device-heap "
        "findings judge the kept ones",
        trace.device_heap_calls.size(), trace.device_heap_calls_dropped));
  }
  if (trace.samples_thinned) {
    p.notes.push_back(fmt::format(
        "a long run: its memory timeline keeps {} of its {} samples (neighbouring samples merged, the higher use "
        "kept, so peaks stay)",
        trace.samples.size(), trace.samples.size() + trace.samples_thinned));
  }
  if (trace.compaction) add_compaction_note(trace, *trace.compaction, p);
  if (r.unmatched_releases) {
    p.notes.push_back(
        fmt::format("{} successful release(s) of memory cuaudit did not see allocated (made before cuaudit "
                    "attached, or by an API it does not track); they are not judged",
                    r.unmatched_releases));
  }
  if (r.forgotten_releases) {
    p.notes.push_back(fmt::format(
        "a long run: the {} oldest release(s) were forgotten to keep cuaudit's memory bounded (at least the most "
        "recent {} are kept, as a sanitizer's quarantine keeps the latest frees); a second release of their memory "
        "would be called an invalid release, not a double one, and a launch argument into it is not called freed",
        r.forgotten_releases, ReleasedRanges::kDefaultCapacity / 2));
  }
  if (r.released_during_shutdown) {
    p.notes.push_back(
        fmt::format("{} release(s) came after CUDA had begun shutting down (cudaErrorCudartUnloading, "
                    "typically from static destructors); they are not counted as leaks",
                    r.released_during_shutdown));
  }
  return p;
}

}  // namespace cuaudit
