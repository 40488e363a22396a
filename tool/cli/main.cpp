// cuaudit: run a program under the injection, analyze what it recorded, report, gate.
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "analysis.h"
#include "baseline.h"
#include "command_texts.h"
#include "diff_json.h"
#include "exit_codes.h"
#include "framework_request.h"
#include "html_report.h"
#include "json_report.h"
#include "launcher.h"
#include "live_metrics.h"
#include "merge.h"
#include "option_words.h"
#include "options.h"
#include "output_path.h"
#include "peak_diff.h"
#include "report_outputs.h"
#include "run_dir.h"
#include "run_ending.h"
#include "running_process.h"
#include "safe_file.h"
#include "signal_forwarding.h"
#include "suppressions.h"
#include "suppressions_command.h"
#include "text_report.h"
#include "watch_options.h"

namespace cuaudit {
namespace {

// `cuaudit repot RUN`: a program that is not found, named like a command, was most likely one.
std::string command_guess(const std::string& program, int exit_code) {
  if (exit_code != kExitNotFound || program.find('/') != std::string::npos) return {};
  const auto guess = closest_word(program, command_words());
  return guess ? fmt::format(" (did you mean `cuaudit {}`?)", *guess) : std::string();
}

// A path the command line named that is not there (or not a directory where one is wanted) is a
// bad command line (2), not cuaudit failing (125): the user mistyped it. What is there but damaged
// is said by the reader.
void refuse_missing_input(const std::string& path, bool directory, const std::string& what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    fail(kExitUsage, fmt::format("{} {}: {} ({})", what, path, strerror(errno),
                                 directory ? "give a run directory" : "give a JSON report or an --output directory"));
  }
  if (directory && !S_ISDIR(st.st_mode)) fail(kExitUsage, not_a_run_dir_message(path));
}

int exit_status(const Options& o, const report::Report& a, const std::optional<RunInfo>& run) {
  if (a.nothing_tracked && !(o.command == Command::Run && !o.run.require_cuda_init)) return kExitNothingTracked;
  if (o.out.error_exitcode && a.summary.error_findings > 0) return *o.out.error_exitcode;
  if (a.incomplete) return kExitIncomplete;  // a damaged record of the run never passes as clean
  if (!run) return 0;
  if (run->signal) return 128 + *run->signal;
  return run->exit_code.value_or(0);
}

// The report says which options were in effect, and where they came from.
void record_options(const Options& o, report::Report& r) {
  r.options_from_environment = o.defaults.from_environment;
  r.options_file = o.defaults.file;
  r.options_from_file = o.defaults.from_file;
  r.options_from_command_line = o.options_from_command_line;
}

// The baseline report, read before any program runs; none without --baseline.
std::optional<report::Report> load_baseline(const Options& o) {
  if (o.analysis.baseline_file.empty()) return std::nullopt;
  try {
    refuse_missing_input(o.analysis.baseline_file, false, "--baseline");
    return read_report_file(o.analysis.baseline_file);
  } catch (const std::exception& e) {
    fail(kExitToolFailure, fmt::format("--baseline: {}", e.what()));
  }
}

// Reads the suppression files now: a bad rule is refused before any program runs.
AnalysisOptions analysis_options(const Options& o) {
  AnalysisOptions a;
  static_cast<CheckOptions&>(a) = o.analysis.checks;
  a.check_leaks = o.out.leak_check != report::LeakDetail::None;
  a.num_callers = o.out.num_callers;
  // Perfetto shows each allocation's life as a slice: enough for any run a viewer can open.
  if (!o.out.perfetto_file.empty()) a.exports.allocation_spans = 200000;
  a.exports.profile_sites = !o.out.pprof_file.empty();
  // The last 200,000 actions, as PyTorch's ring buffer keeps its last max_entries: the viewer draws
  // about that many without slowing down.
  if (!o.out.memory_viz_file.empty()) a.exports.memory_viz_entries = 200000;
  try {
    for (const auto& m : o.out.path_maps) a.path_map.push_back(parse_path_mapping(m));
    for (const auto& prefix : o.out.strip_prefixes) a.path_map.push_back({prefix, ""});
    a.debug_files.directories = o.out.debug_dirs;
    for (const auto& k : o.analysis.kernel_names) add_to_filter(a.kernels, k, "--kernel-name");
    for (const auto& k : o.analysis.kernel_names_excluded)
      add_to_filter(a.kernels_excluded, k, "--kernel-name-exclude");
    a.nvdisasm = o.analysis.nvdisasm;
    for (const auto& p : o.analysis.process_filters) add_to_filter(a.processes, p, "--target-processes-filter");
    for (const auto& file : o.analysis.suppression_files) a.suppressions.load_file(file);
    for (const auto& pattern : o.analysis.keep_patterns) {
      // An allow-list of nothing would suppress every finding and turn the gate green: as the same
      // rule in a file (keep:), it is refused. In CI it is usually an unset variable.
      if (pattern.find_first_not_of(" \t") == std::string::npos) {
        throw std::runtime_error(
            "--keep-only '' keeps nothing: every finding would be suppressed and the gate would pass (an unset "
            "variable, as in --keep-only \"$MYLIB\"?); give a pattern, or leave --keep-only out");
      }
      SuppressionRule keep{std::nullopt, pattern, "", "--keep-only", 0};
      keep.keep = true;
      a.suppressions.add(std::move(keep));
    }
    // After the user's: a rule of theirs for the same memory decides first.
    if (o.analysis.builtin_suppressions) a.suppressions.load_text(builtin_allocator_rules(), "builtin", true);
  } catch (const std::exception& e) {
    fail(kExitUsage, e.what());
  }
  return a;
}

// Where the injection writes: the --save directory (created, must hold no earlier run) or a
// private temporary one.
std::string prepare_run_dir(Options& o, bool& temporary) {
  temporary = o.run.save_dir.empty();
  // %p is cuaudit's own pid here: the program has not started yet.
  o.run.save_dir = expand_output_path(o.run.save_dir, static_cast<uint64_t>(getpid()));
  if (temporary) {
    const char* tmp = getenv("TMPDIR");
    std::string pattern = fmt::format("{}/cuaudit-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(pattern.data())) fail(kExitToolFailure, fmt::format("cannot create {}: {}", pattern, strerror(errno)));
    return pattern;
  }
  if (mkdir(o.run.save_dir.c_str(), 0700) != 0 && errno != EEXIST) {  // the run is private: command lines, paths
    fail(kExitToolFailure, fmt::format("cannot create --save directory {}: {}", o.run.save_dir, strerror(errno)));
  }
  // An existing directory must be the user's own and not writable by everyone: whoever else can
  // write there could plant links where the injection, the hooks and cuaudit write. (Group-writable
  // is accepted: with a umask of 002, a user's own directories are.)
  struct stat st;
  if (stat(o.run.save_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    fail(kExitToolFailure, fmt::format("--save {} is not a directory", o.run.save_dir));
  }
  if (st.st_uid != geteuid()) {
    fail(kExitToolFailure, fmt::format("--save directory {} belongs to another user (uid {}); give a directory of "
                                       "your own",
                                       o.run.save_dir, st.st_uid));
  }
  if (st.st_mode & S_IWOTH) {
    fail(kExitToolFailure, fmt::format("--save directory {} is writable by others (mode {:o}); give a new "
                                       "directory, or make it yours alone (chmod o-w)",
                                       o.run.save_dir, st.st_mode & 07777));
  }
  if (!list_traces(o.run.save_dir).empty() || access((o.run.save_dir + "/" + kRunInfoFile).c_str(), F_OK) == 0) {
    fail(kExitToolFailure, fmt::format("--save directory {} already holds a recorded run; give an empty or new "
                                       "directory",
                                       o.run.save_dir));
  }
  if (access(o.run.save_dir.c_str(), W_OK) != 0) {
    fail(kExitToolFailure, fmt::format("--save directory {} is not writable", o.run.save_dir));
  }
  char absolute[PATH_MAX];
  return realpath(o.run.save_dir.c_str(), absolute) ? std::string(absolute) : o.run.save_dir;
}

// Before a snapshot reads the run directory: PyTorch's and JAX's files as of now, not as of the
// hooks' last periodic write (a PyTorch history of 100,000 events took 0.75 s to write on the H200).
constexpr auto kFrameworkAnswerLimit = std::chrono::seconds(10);
// Before a stop is passed on, a shorter wait: what stops a job grants a grace period (Docker's is
// 10 s), and PyTorch's first memory snapshot in a process took up to 6 s on the H200.
constexpr auto kFrameworkStopLimit = std::chrono::seconds(8);

void refresh_framework_files(const std::string& run_dir) {
  for (const std::string& warning : ask_framework_files(run_dir, kFrameworkAnswerLimit))
    std::cerr << "cuaudit: warning: " << warning << '\n';
}

// One interim report of the running program (--snapshot-interval): JSON, and HTML with --html, next
// to the final one with the snapshot's number before the extension (report.snapshot-3.json); without
// --json, in the --save directory, or in the working directory for a temporary run.
void write_snapshot(const Options& o, const AnalysisOptions& analysis, const std::string& run_dir, bool temporary,
                    uint64_t pid, size_t number) {
  AnalysisOptions options = analysis;
  options.snapshot = true;
  refresh_framework_files(run_dir);
  report::Report r;
  try {
    r = analyze_run_dir(run_dir, options);
  } catch (const std::exception& e) {
    std::cerr << "cuaudit: warning: snapshot " << number << " failed: " << e.what() << '\n';
    return;
  }
  record_options(o, r);
  const std::string tag = fmt::format("snapshot-{}", number);
  // Interim reports are files even when the final one goes to standard output (`--json -`).
  const bool json_file = !o.out.json_file.empty() && o.out.json_file != kStandardOutput;
  const std::string json = json_file    ? numbered_path(expand_output_path(o.out.json_file, pid), tag)
                           : !temporary ? fmt::format("{}/{}.json", run_dir, tag)
                                        : fmt::format("cuaudit-{}.json", tag);
  std::string error;
  // By rename: a link planted where a snapshot goes (the working directory) is replaced, never
  // written through.
  if (!replace_file(json, report::render_json(r), error)) {
    std::cerr << "cuaudit: warning: " << error << '\n';
    return;
  }
  if (!o.out.html_file.empty() && o.out.html_file != kStandardOutput) {
    const std::string html = numbered_path(expand_output_path(o.out.html_file, pid), tag);
    if (!replace_file(html, report::render_html(r, html_source_root(o)), error))
      std::cerr << "cuaudit: warning: " << error << '\n';
  }
  if (number == 1) {
    std::cerr << "cuaudit: interim reports every " << o.run.snapshot_interval_ms / 1000.0 << " s: " << json
              << (o.out.html_file.empty() ? "" : " (and .html)") << ", numbered\n";
  }
}

// --metrics and --metrics-file: the server listens before the program starts, so a bad address or
// a taken port fails at once, not after an hour's run.
std::optional<LiveMetrics> start_metrics(const Options& o, const AnalysisOptions& analysis, const std::string& run_dir,
                                         bool temporary) {
  std::optional<LiveMetrics> metrics;
  if (o.run.metrics_address.empty() && o.run.metrics_file.empty()) return metrics;
  try {
    metrics.emplace(o.run.metrics_address, o.run.metrics_file, run_dir, analysis);
  } catch (const std::exception& e) {
    if (temporary) remove_run_dir(run_dir);
    fail(kExitUsage, e.what());
  }
  if (const MetricsServer* server = metrics->server())
    std::cerr << "cuaudit: metrics at " << server->url() << ", refreshed every " << o.run.metrics_interval_ms / 1000.0
              << " s\n";
  return metrics;
}

// Another tool's injection is replaced (CUDA loads one); an NVTX tool's is kept, and says what that costs.
void warn_about_other_injections(const std::string& injection) {
  if (const char* other = getenv("CUDA_INJECTION64_PATH"); other && *other && injection != other) {
    std::cerr << "cuaudit: warning: replacing CUDA_INJECTION64_PATH=" << other << " with cuaudit's injection\n";
  }
  if (const char* other = getenv("NVTX_INJECTION64_PATH"); other && *other && injection != other) {
    std::cerr << "cuaudit: warning: NVTX_INJECTION64_PATH=" << other
              << " is kept: NVTX-annotated pools describe their blocks to that tool, not to cuaudit\n";
  }
}

// What the launcher needs of the command line to start the program under the injection.
LaunchRequest launch_request(const Options& o, const std::string& program_path, const std::string& injection,
                             const std::string& run_dir) {
  LaunchRequest request;
  request.argv = o.run.program;
  request.program_path = program_path;
  request.injection_path = injection;
  request.preload_path = find_preload_library(injection);
  request.run_dir = run_dir;
  request.record_call_sites = o.analysis.checks.check_api_results;
  request.target_processes = o.run.target_processes;
  request.sample_interval_ms = o.run.sample_interval_ms;
  request.check_launch_params = o.run.check_launch_params;
  request.track_resources = o.run.track_resources;
  if (o.run.watch) {
    request.stack_sample_bytes = o.run.stack_sample_bytes;
    request.stack_exact_bytes = o.run.stack_exact_bytes;
    request.torch_history_entries = kWatchTorchHistoryEntries;
  }
  if (o.run.python_hooks) request.python_hooks_dir = find_python_hooks(injection);
  return request;
}

int run_command(Options o) {
#ifdef CUAUDIT_TOOL_ONLY
  fail(kExitToolFailure,
       "this cuaudit was built without the CUDA toolkit (CUAUDIT_TOOL_ONLY): it analyses recorded runs "
       "(cuaudit report, merge, diff) but cannot run programs; use a full build to record one");
#endif
  std::string program_path, injection, sanitizer_library;
  try {
    program_path = resolve_program(o.run.program.front());
    injection = find_injection_library(o.run.injection_path);
    if (o.run.device_heap) sanitizer_library = find_sanitizer_library();
  } catch (const LaunchError& e) {
    fail(e.exit_code, e.what() + command_guess(o.run.program.front(), e.exit_code));
  }
  refuse_unwritable_outputs(o);  // before the program runs, not after it spent an hour
  if (!o.run.output.empty()) {
    // --output NAME names one run: its directory and its report.json expand %p alike, to cuaudit's
    // own pid (the program's is not known before it starts).
    const std::string name = expand_output_path(o.run.output, static_cast<uint64_t>(getpid()));
    if (o.out.json_file == o.run.output + "/report.json") o.out.json_file = name + "/report.json";
    o.run.output = o.run.save_dir = name;
  }
  warn_about_other_injections(injection);

  const AnalysisOptions analysis = analysis_options(o);
  const std::optional<report::Report> baseline = load_baseline(o);
  bool temporary = false;
  const std::string run_dir = prepare_run_dir(o, temporary);
  RunInfo run;
  LaunchRequest request = launch_request(o, program_path, injection, run_dir);
  request.sanitizer_library = sanitizer_library;
  SignalForwarding signals(run_dir);  // a CI timeout's SIGTERM still gets its report
  request.signals = &signals;
  // A job stopped through cuaudit (a container's SIGTERM reaches only PID 1) keeps its tensors by line.
  request.before_passing_on = [&run_dir] {
    for (const std::string& warning : ask_framework_files(run_dir, kFrameworkStopLimit))
      std::cerr << "cuaudit: warning: " << warning << '\n';
  };
  size_t snapshots = 0;
  if (o.run.snapshot_interval_ms) {
    request.while_running.push_back({o.run.snapshot_interval_ms, [&](uint64_t pid) {
                                       write_snapshot(o, analysis, run_dir, temporary, pid, ++snapshots);
                                     }});
  }
  std::optional<LiveMetrics> metrics = start_metrics(o, analysis, run_dir, temporary);
  if (metrics) request.while_running.push_back({o.run.metrics_interval_ms, [&](uint64_t) { metrics->refresh(); }});
  add_compaction_task(o.run, run_dir, request);
  try {
    run = run_program(request);
  } catch (const LaunchError& e) {
    if (temporary) remove_run_dir(run_dir);
    fail(e.exit_code, e.what());
  }
  run.launch_params_recorded = o.run.check_launch_params && !o.run.device_heap;  // CUPTI's launches only
  run.resources_recorded = o.run.track_resources;
  const AnalysisOptions final_analysis = save_run_info(run_dir, run, analysis);

  report::Report result;
  try {
    result = analyze_run_dir(run_dir, final_analysis);
  } catch (const std::exception& e) {
    fail(kExitToolFailure, fmt::format("cannot analyze the run in {}: {}", run_dir, e.what()));
  }
  if (baseline) apply_baseline(o.analysis.baseline_file, *baseline, result);
  record_options(o, result);
  if (metrics) metrics->publish(result);   // the file, and the server until cuaudit exits, say how it ended
  if (temporary) say_on_failure(run_dir);  // a report that cannot be written keeps the run, and says where
  write_outputs(o, result, run.pid, text_report(o, result));
  say_on_failure("");
  keep_or_remove_run_dir(run_dir, temporary, run);
  return exit_status(o, result, run);
}

int merge_command(const Options& o) {
  refuse_unwritable_outputs(o);
  report::Report merged;
  try {
    std::vector<report::Report> inputs;
    for (const std::string& input : o.merge_inputs) refuse_missing_input(input, false, "cannot read");
    for (const std::string& input : o.merge_inputs) inputs.push_back(read_report_file(input));
    merged = merge_reports(inputs, o.merge_inputs);
  } catch (const std::exception& e) {
    fail(kExitToolFailure, e.what());
  }
  write_outputs(o, merged, 0, quiet_has_nothing_to_say(o, merged) ? "" : report::render_merged_text(merged));
  if (o.out.error_exitcode && merged.summary.error_findings > 0) return *o.out.error_exitcode;
  return merged.incomplete ? kExitIncomplete : 0;
}

int diff_command(const Options& o) {
  refuse_unwritable_outputs(o);
  report::Report before, after;
  refuse_missing_input(o.analysis.baseline_file, false, "cannot read");
  refuse_missing_input(o.run_dir, false, "cannot read");
  try {
    before = read_report_file(o.analysis.baseline_file);
    after = read_report_file(o.run_dir);
  } catch (const std::exception& e) {
    fail(kExitToolFailure, e.what());
  }
  apply_baseline(o.analysis.baseline_file, before, after);
  const std::vector<report::DevicePeakChange> peaks = report::peak_changes(before, after);
  std::cerr << report::render_baseline_diff(after) << report::render_peak_diff(peaks);
  if (!o.out.json_file.empty()) {
    write_file_or_fail(o.out.json_file,
                       report::render_diff_json(before, after, peaks, o.analysis.baseline_file, o.run_dir));
  }
  // After the baseline is applied, the summary's errors are the new ones.
  if (o.out.error_exitcode && after.summary.error_findings > 0) return *o.out.error_exitcode;
  if (before.incomplete || after.incomplete) {
    std::cerr << "cuaudit: " << (after.incomplete ? o.run_dir : o.analysis.baseline_file)
              << " is an incomplete report: the comparison covers what it holds\n";
    return kExitIncomplete;
  }
  return 0;
}

// `cuaudit snapshot PID`: the run directory of the program running under cuaudit.
std::string snapshot_run_dir(const std::string& run_or_pid) {
  struct stat st;
  if (stat(run_or_pid.c_str(), &st) == 0 || run_or_pid.empty() ||
      run_or_pid.find_first_not_of("0123456789") != std::string::npos) {
    return run_or_pid;
  }
  try {
    return run_dir_of_process(std::stoull(run_or_pid));
  } catch (const std::exception& e) {
    fail(kExitUsage, e.what());  // no such process, or not one cuaudit started: the user's input
  }
}

int report_command(Options o) {
  refuse_unwritable_outputs(o);
  report::Report analysis;
  std::optional<RunInfo> run;
  const std::optional<report::Report> baseline = load_baseline(o);
  AnalysisOptions options = analysis_options(o);
  if (o.command == Command::Snapshot) {
    options.snapshot = true;
    const bool pid = !o.run_dir.empty() && o.run_dir.find_first_not_of("0123456789") == std::string::npos;
    if (!pid) refuse_missing_input(o.run_dir, true, "cannot read the run directory");
    o.run_dir = snapshot_run_dir(o.run_dir);
    refresh_framework_files(o.run_dir);
  } else {
    refuse_missing_input(o.run_dir, true, "cannot read the run directory");
  }
  try {
    analysis = analyze_run_dir(o.run_dir, options);
  } catch (const NotARunDirectory& e) {
    fail(kExitUsage, e.what());  // the wrong directory named: the user's input
  } catch (const std::exception& e) {
    fail(kExitToolFailure, e.what());
  }
  try {
    run = read_run_info(o.run_dir);  // the pid %p expands to; damage was said by the analysis
  } catch (const std::exception&) {
  }
  if (baseline) apply_baseline(o.analysis.baseline_file, *baseline, analysis);
  record_options(o, analysis);
  write_outputs(o, analysis, run ? run->pid : 0, text_report(o, analysis));
  return exit_status(o, analysis, std::nullopt);
}

}  // namespace
}  // namespace cuaudit

int main(int argc, char** argv) {
  using namespace cuaudit;
  keep_writing_on_broken_pipe();  // the report files come out even when stderr's reader is gone
  Options options;
  if (auto done = parse_command_line(argc, argv, options)) return *done;
  if (options.analysis.print_builtin_suppressions) {
    std::cout << builtin_allocator_rules();
    return 0;
  }
  switch (options.command) {
    case Command::Report:
    case Command::Snapshot:
      return report_command(options);
    case Command::Merge:
      return merge_command(options);
    case Command::Diff:
      return diff_command(options);
    case Command::Suppressions:
      return suppressions_command(options);
    case Command::Run:
      break;
  }
  return run_command(options);
}
