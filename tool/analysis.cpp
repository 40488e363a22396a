#include "analysis.h"

#include <dirent.h>
#include <sys/stat.h>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checks.h"
#include "device_heap_lines.h"
#include "device_heap_series.h"
#include "error_findings.h"
#include "export_collectors.h"
#include "framework_history.h"
#include "kernel_access.h"
#include "kernel_names.h"
#include "library_handles.h"
#include "migration_series.h"
#include "pipeline.h"
#include "process_account.h"
#include "python_hooks.h"
#include "replay.h"
#include "run_bounds.h"
#include "run_dir.h"
#include "run_integrity.h"
#include "sampled_stacks.h"
#include "shared_memory_findings.h"
#include "site_history.h"
#include "site_labels.h"
#include "stack_resolver.h"
#include "symbolizer.h"
#include "text_helpers.h"
#include "timeline.h"
#include "trace_reader.h"

#ifndef CUAUDIT_VERSION
#define CUAUDIT_VERSION "unknown"
#endif

namespace cuaudit {
namespace {

// --target-processes-filter: the executable's name, or the command line (a Python script's name).
bool process_selected(const ProcessTrace& trace, const NameFilter& filter) {
  if (trace.command.empty()) return false;
  return filter.matches(report::basename_of(trace.command.front())) ||
         filter.matches(report::join_words(trace.command));
}

// --kernel-name and --kernel-name-exclude: which kernels' launch findings are reported.
bool kernel_selected(const std::string& kernel, const AnalysisOptions& options) {
  return (options.kernels.empty() || options.kernels.matches(kernel)) && !options.kernels_excluded.matches(kernel);
}

// What the stages share: the run directory's own account and the caches kept beside its traces.
struct RunState {
  std::string dir;
  std::optional<RunInfo> run;
  std::vector<std::string> traces;  // the files
  std::vector<TraceFile> loaded;    // those that could be read, the launched process first
  Symbolizer symbolizer;
  CallSiteJudge call_sites;
  bool symbols_loaded = false, call_sites_loaded = false, kernel_access_loaded = false;
  std::unique_ptr<KernelRequirements> kernel_code;
  bool call_sites_recorded = false;
  size_t tracked = 0, filtered_out = 0;
  // The --suppressions and held_by_allocator rules, counting this run's hits: the leak check asks
  // the latter as it makes findings, the finish stage applies the former.
  Suppressions rules;
};

// What one process's single replay found.
struct ProcessAnalysis {
  const ProcessTrace* trace = nullptr;
  std::vector<report::Finding> findings;  // all but those that need the other processes
  SharedMemoryUse shared_memory;
  bool call_sites_recorded = false;
};

// What the enrichment gave one process before its replay.
struct Enriched {
  std::vector<Event> framework_events;  // frameworks' pools (PyTorch's, XLA's), merged by time into the replay
  std::vector<std::string> notes;
};

// The launcher's account of how the program ended (run.json), or what it knows when it could not
// write one.
void read_run_account(RunState& state, const std::string& dir, const AnalysisOptions& options, report::Report& report) {
  // A damaged run.json (the launcher's account of how the program ended) costs that account, not
  // the traces.
  try {
    state.run = read_run_info(dir);
  } catch (const std::exception& e) {
    report.notes.push_back(fmt::format("{}; how the program ended is taken from its trace alone", e.what()));
    report.incomplete = true;
  }
  // The launcher knows how the program ended even when it could not write it down: its account keeps
  // the end-record checks that catch a trace cut short.
  if (options.unsaved_run && !state.run) {
    state.run = options.unsaved_run;
    report.notes.push_back(fmt::format(
        "{}: the disk may be full, and what filled it may have cut the traces too; how the program ended is taken "
        "from the launcher",
        options.unsaved_run_error));
    report.incomplete = true;
  }
}

// Stage::Index: run.json, the caches, every trace's first pass, the processes in report order.
void index_run(RunState& state, const std::string& dir, const AnalysisOptions& options, report::Report& report) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw std::runtime_error(not_a_run_dir_message(dir));
  }
  state.dir = dir;
  read_run_account(state, dir, options, report);
  // A directory that cannot be listed is not a run without CUDA: say what stops the reading.
  if (DIR* listing = opendir(dir.c_str())) {
    closedir(listing);
  } else {
    throw std::runtime_error(fmt::format("cannot list the run directory {}: {}", dir, strerror(errno)));
  }
  state.traces = list_traces(dir);
  if (state.traces.empty() && !state.run && !report.incomplete) {
    throw NotARunDirectory(
        fmt::format("{} holds no cuaudit trace (trace-<pid>.cutrace) and no run.json; it is not a cuaudit run "
                    "directory (give the directory of cuaudit --save, or of a run cuaudit named)",
                    dir));
  }
  std::string error;
  state.symbolizer.set_debug_file_search(options.debug_files);
  // A cache that cannot be read is left as it is (it may hold what this machine cannot resolve).
  state.symbols_loaded = state.symbolizer.load_cache(dir + "/" + kSymbolCacheFile, error);
  if (!state.symbols_loaded) report.notes.push_back(error + "; it is left unchanged");
  state.call_sites_loaded = state.call_sites.load_cache(dir + "/" + kCallSiteCacheFile, error);
  if (!state.call_sites_loaded) report.notes.push_back(error + "; it is left unchanged");
  state.kernel_code = std::make_unique<KernelRequirements>(dir, options.nvdisasm);
  state.kernel_access_loaded = state.kernel_code->load_cache(dir + "/" + kKernelAccessCacheFile, error);
  if (!state.kernel_access_loaded) report.notes.push_back(error + "; it is left unchanged");

  // The process the launcher started first, then the others in the order they started.
  // One unreadable trace (a child killed before its header was written, a foreign file) costs that
  // process, not the run: the others are reported and the report says it is incomplete.
  std::vector<std::string> unreadable;
  for (const std::string& file : state.traces) {
    try {
      state.loaded.push_back(TraceFile::open(file));
    } catch (const TraceError& e) {
      unreadable.push_back(e.what());
    }
  }
  if (state.loaded.empty() && !unreadable.empty()) throw std::runtime_error(unreadable.front());
  for (const std::string& why : unreadable) report.notes.push_back(why + "; that process is not in this report");
  if (!unreadable.empty()) report.incomplete = true;
  drop_repeated_processes(state.loaded, report);
  for (TraceFile& file : state.loaded) {
    ProcessTrace& trace = file.metadata();
    // A snapshot reads the traces while they are written: a process that has not reached its end
    // is in the middle of writing its last chunk, which is not damage.
    const bool running = options.snapshot || left_running(state.run, trace.pid);
    if (running && !trace.reached_exit && trace.cut_short_problem) {
      trace.problems.erase(trace.problems.begin() + static_cast<std::ptrdiff_t>(*trace.cut_short_problem));
      trace.cut_short_problem.reset();
    }
    note_missing_records(file, trace, state.run, running);
    report.incomplete |= !trace.problems.empty();
  }
  const std::optional<RunInfo>& run = state.run;
  std::stable_sort(state.loaded.begin(), state.loaded.end(), [&](const TraceFile& x, const TraceFile& y) {
    const ProcessTrace& a = x.metadata();
    const ProcessTrace& b = y.metadata();
    const bool a_root = run && a.pid == run->pid, b_root = run && b.pid == run->pid;
    if (a_root != b_root) return a_root;
    // No start time (a forked child that could not describe itself: its first event was a crash):
    // after the processes that have one, which started before it.
    const bool a_known = a.start_realtime_ns != 0, b_known = b.start_realtime_ns != 0;
    if (a_known != b_known) return a_known;
    return a.start_realtime_ns < b.start_realtime_ns;
  });
}

// Stage::Enrich: what other sources say of the process (PyTorch's pool), and the code of the
// kernels whose launch facts the report keeps, read before the replay needs them.
Enriched enrich_process(RunState& state, ProcessTrace& trace, const AnalysisOptions& options) {
  Enriched out;
  load_python_hooks(state.dir, trace, out.notes);
  out.framework_events = load_framework_histories(state.dir, trace, out.notes);
  add_device_heap_lines(state.dir, trace);
  state.kernel_code->prepare(
      trace, [&](const std::string& kernel) { return kernel_selected(kernel_display_name(kernel), options); });
  return out;
}

// A check's findings after the others': the first list moved whole (a leak report of a million
// sites is not copied finding by finding).
void append_findings(std::vector<report::Finding>&& found, std::vector<report::Finding>& all) {
  if (all.empty()) {
    all = std::move(found);
    return;
  }
  all.insert(all.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
}

// Stage::Replay and Stage::ProcessChecks: the process's events read once, as a stream, and every
// check run on that one replay: the replay and the checks' observers keep what is live and
// per-site counts; `trace.events` keeps the few events the checks look back at afterwards (all
// but the successful allocations and releases, which are the bulk of a trace).
ProcessAnalysis analyze_process(RunState& state, TraceFile& file, Enriched& enriched, const AnalysisOptions& options,
                                report::Report& report) {
  ProcessTrace& trace = file.metadata();
  ProcessAnalysis out;
  out.trace = &trace;
  StackResolver stacks(trace, state.symbolizer);
  // What the report shows besides findings, and what several checks read.
  ObserverList observers;
  SiteHistory history(trace);
  observers.add(&history);  // first: the timeline reads what it holds
  TimelineObserver timeline(trace, history, report.timeline);
  if (!trace.samples.empty()) observers.add(&timeline);
  RunBounds bounds;
  observers.add(&bounds);
  SharedMemoryObserver shared(trace);
  observers.add(&shared);
  ExportCollectors exports(trace, stacks, options.exports, report);
  exports.add_to(observers);
  const std::vector<std::unique_ptr<Check>> checks = make_checks(trace, options);
  for (const auto& check : checks) {
    if (ReplayObserver* o = check->observer()) observers.add(o);
  }

  Replayer replayer(trace, &observers);
  trace.events.clear();
  std::unordered_map<uint32_t, bool> selected_kernels;  // kernel id -> kept by --kernel-name (demangled once)
  const auto selected = [&](uint32_t kernel_id) {
    auto [it, inserted] = selected_kernels.try_emplace(kernel_id, true);
    if (inserted) {
      auto name = trace.kernels.find(kernel_id);
      it->second = name == trace.kernels.end() || kernel_selected(kernel_display_name(name->second), options);
    }
    return it->second;
  };
  const EventPipe::Lookahead ahead = [&replayer](const Event& e, bool near) { replayer.prefetch(e, near); };
  file.play(
      [&](const Event& e) {
        if (e.kind == EventKind::LaunchParam && e.launch_param().word) {
          // A word of the parameters, which may be an integer: what it means depends on what the
          // kernel's code does with it (a word not 16-byte aligned, one into host memory). A kernel
          // the report leaves out is not judged at all.
          if (!selected(e.launch_param().kernel_id)) return;
          const std::optional<LaunchParamFact> judged = state.kernel_code->judge_word(trace, e);
          if (!judged) return;
          Event word = e;
          word.payload = *judged;
          replayer.apply(word);
          trace.events.push_back(word);
          return;
        }
        replayer.apply(e);
        const bool bulk = e.is_memory() && e.memory().result == 0;
        if (!bulk) trace.events.push_back(e);
        out.call_sites_recorded |= e.kind == EventKind::CallSite;
      },
      enriched.framework_events.empty() ? nullptr : &enriched.framework_events, &ahead);
  // As of now: in a snapshot, or a process the program left running when it ended.
  const bool as_of_now = options.snapshot || left_running(state.run, trace.pid);
  const bool running = as_of_now && !ending_fact(trace);
  const ReplayResult result = replayer.finish(running ? std::optional(LeakEnd::StillRunning) : std::nullopt);
  history.finish();
  out.shared_memory = shared.use();
  report.processes.push_back(describe_process(trace, state.run, as_of_now, bounds.last_ns(trace), result));
  for (std::string& note : enriched.notes) report.processes.back().notes.push_back(std::move(note));
  if (trace.stack_sampling.on()) report.processes.back().notes.push_back(sampled_process_note(trace.stack_sampling));
  report.incomplete |= trace.side_file_damaged;
  if (!trace.tracked) return out;

  if (!trace.samples.empty()) timeline.finish(stacks);
  add_site_series(trace, history, stacks, report.timeline);
  add_device_heap_series(trace, report.timeline);
  add_migration_series(trace, report.timeline);
  exports.finish(result, history, timeline);
  FailureJudge failures(trace, stacks, state.call_sites);
  std::set<uint64_t> explained;
  Holders holders(state.rules, options.path_map);
  CheckContext context{trace, result, stacks, failures, explained, bounds, history, holders, options};
  for (const auto& check : checks) append_findings(check->findings(context), out.findings);
  return out;
}

// --num-callers: a stack keeps its first `keep` frames (0: all) and counts the rest.
void cut_to_num_callers(std::vector<report::Frame>& stack, uint64_t& omitted, size_t keep) {
  if (!keep || stack.size() <= keep) return;
  omitted = stack.size() - keep;
  stack.resize(keep);
}

// Stage::RunChecks: memory shared between processes, judged once every process's replay has been
// seen; library handles; the kernel filter; --num-callers.
void run_checks(RunState& state, std::vector<ProcessAnalysis>& analyzed, const AnalysisOptions& options,
                report::Report& report) {
  std::vector<SharedMemoryUse> shared;
  for (const ProcessAnalysis& a : analyzed) shared.push_back(a.shared_memory);
  const SharedMemoryImports imports(shared);
  for (ProcessAnalysis& a : analyzed) {
    if (!a.trace->tracked) continue;
    StackResolver stacks(*a.trace, state.symbolizer);
    for (auto& f : shared_memory_findings(a.shared_memory, imports, stacks)) a.findings.push_back(std::move(f));
    judge_library_handles(a.findings);  // before the stacks are cut to --num-callers: it reads past the create call
    for (auto& f : a.findings) {
      if (f.parameter && !kernel_selected(f.parameter->kernel, options)) continue;
      cut_to_num_callers(f.stack, f.omitted_frames, options.num_callers);
      for (report::RelatedStack& r : f.related) cut_to_num_callers(r.stack, r.omitted_frames, options.num_callers);
      report.findings.push_back(std::move(f));
    }
  }
}

// The run's own notes: a snapshot, filtered processes, nothing tracked, modules without symbols,
// kernels whose code could not be checked.
void run_notes(RunState& state, const AnalysisOptions& options, report::Report& report) {
  if (options.snapshot) {
    report.notes.push_back(
        "a snapshot: read while the program may still be running; what a running process holds is reported as "
        "live, not as leaked");
  }
  if (state.run) {
    if (auto note = stop_note(*state.run)) report.notes.push_back(*note);
    if (const std::vector<uint64_t>& left = state.run->still_running; !left.empty()) {
      report.notes.push_back(fmt::format(
          "the program left {} process(es) running when it ended (pid {}); cuaudit did not wait for them: each that "
          "records is reported as it was then, its memory live, not leaked",
          left.size(), fmt::join(left, ", ")));
    }
  }
  if (state.filtered_out) {
    report.notes.push_back(fmt::format(
        "{} process(es) not reported: their names do not match --target-processes-filter", state.filtered_out));
  }
  if (state.tracked == 0) {
    report.nothing_tracked = true;
    if (state.run && report.processes.empty()) {
      report::Process p;
      p.pid = state.run->pid;
      p.command = state.run->command;
      apply_run_info(*state.run, p);
      p.tracked = false;
      report.processes.push_back(std::move(p));
    }
    report.notes.push_back(
        state.traces.empty()
            ? "nothing could be tracked: the program never initialized the CUDA driver, so cuaudit was never loaded "
              "(no NVIDIA driver or GPU on this machine, or the program made no CUDA call)"
            : "nothing could be tracked: cuaudit could not attach to any process (see the notes above)");
  }
  // Only the modules a reader actually meets in a shown frame without a name are worth a note.
  std::set<std::string> unnamed;
  for (const auto& f : report.findings) {
    for (const auto& frame : f.stack) {
      if (frame.function.empty() && !frame.module.empty()) unnamed.insert(frame.module);
    }
  }
  for (const auto& module : unnamed) {
    const std::string why = state.symbolizer.why_unavailable(module);
    if (!why.empty()) report.notes.push_back("no symbols for " + why);
  }
  for (std::string& note : state.kernel_code->notes()) report.notes.push_back(std::move(note));
  if (options.check_api_results && !state.call_sites_recorded && state.tracked > 0) {
    report.notes.push_back(
        "--check-api-results: this run recorded no call sites of successful calls (record it with "
        "`cuaudit --check-api-results`); only allocations and releases were linted");
  }
}

// Stage::Finish: paths mapped, suppressions applied, the summary, and what was resolved kept
// beside the trace, so the run reads the same on another machine.
void finish_report(RunState& state, const AnalysisOptions& options, report::Report& report) {
  map_report_paths(report, options.path_map);
  label_timeline_sites(report.timeline, state.rules);  // named as the report shows the frames
  label_growth_sites(report.findings, state.rules);
  state.rules.apply(report.findings);
  for (const SuppressionRule& r : state.rules.rules()) {
    if (r.builtin && r.hits == 0) continue;  // the shipped rules are listed where they matched
    report.suppressions.push_back({r.table_text(), r.file, r.line, r.hits, r.bytes});
  }
  if (state.rules.has_keep_rules())  // what the allow-list left out, counted as a rule of its own
    report.suppressions.push_back(
        {"(through no keep: rule)", "", 0, state.rules.kept_out(), state.rules.kept_out_bytes()});
  report.summary = report::summarize(report.findings);
  const std::string& dir = state.dir;
  if (access(dir.c_str(), W_OK) != 0) return;
  std::string error;
  if (state.symbols_loaded && !state.symbolizer.save_cache(dir + "/" + kSymbolCacheFile, error))
    report.notes.push_back(error);
  if (state.call_sites_loaded && !state.call_sites.save_cache(dir + "/" + kCallSiteCacheFile, error))
    report.notes.push_back(error);
  if (state.kernel_access_loaded && state.kernel_code->changed() &&
      !state.kernel_code->save_cache(dir + "/" + kKernelAccessCacheFile, error))
    report.notes.push_back(error);
}

}  // namespace

std::string not_a_run_dir_message(const std::string& dir) {
  return fmt::format("{} is not a directory; give `cuaudit report` the directory that `cuaudit --save DIR` wrote", dir);
}

report::Report analyze_run_dir(const std::string& dir, const AnalysisOptions& options) {
  report::Report report;
  report.tool_version = CUAUDIT_VERSION;
  RunState state;
  state.rules = options.suppressions;
  index_run(state, dir, options, report);
  std::vector<ProcessAnalysis> analyzed;
  for (TraceFile& file : state.loaded) {
    ProcessTrace& trace = file.metadata();
    if (!options.processes.empty() && !process_selected(trace, options.processes)) {
      ++state.filtered_out;
      continue;
    }
    Enriched enriched = enrich_process(state, trace, options);
    analyzed.push_back(analyze_process(state, file, enriched, options, report));
    state.call_sites_recorded |= analyzed.back().call_sites_recorded;
    if (trace.tracked) ++state.tracked;
  }
  run_checks(state, analyzed, options, report);
  run_notes(state, options, report);
  report.unchecked = unchecked_kinds(options, state.run ? state.run->launch_params_recorded : std::nullopt,
                                     state.run ? state.run->resources_recorded : std::nullopt);
  finish_report(state, options, report);
  return report;
}

}  // namespace cuaudit
