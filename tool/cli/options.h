// The command line, declared once: cuaudit [run] [options] [--] program [args...]
//                                   cuaudit report [options] RUN_DIR
//                                   cuaudit snapshot [options] RUN_DIR|PID
//                                   cuaudit merge [options] REPORT...
//                                   cuaudit diff [options] OLD NEW
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check_options.h"
#include "option_defaults.h"
#include "text_report.h"

namespace cuaudit {

enum class Command { Run, Report, Snapshot, Merge, Diff, Suppressions };

// How a report is written, for every command that writes one (run, report, snapshot, merge;
// diff reads error_exitcode only).
struct OutputOptions {
  report::LeakDetail leak_check = report::LeakDetail::Full;  // --leak-check full | summary | no
  std::optional<int> error_exitcode;
  std::string log_file;
  std::string json_file;
  std::string sarif_file;
  std::string junit_file;
  std::string html_file;
  std::string perfetto_file;                // --perfetto: the timeline as Chrome trace events
  std::string collapsed_file;               // --collapsed: leaks and peaks as collapsed stacks
  std::string pprof_file;                   // --pprof: every site's memory as a pprof profile
  std::string memory_viz_file;              // --memory-viz: a PyTorch memory snapshot (pickle)
  std::string source_root;                  // SARIF paths are relative to it; default: the working directory
  std::vector<std::string> path_maps;       // --path-map OLD=NEW, in order
  std::vector<std::string> strip_prefixes;  // --strip-path-prefix PREFIX
  std::vector<std::string> debug_dirs;      // --debug-file-directory DIR, in order
  size_t print_limit = 100;
  bool show_notes = false;  // --show-notes: every note on its own line in the text report
  size_t num_callers = 30;  // as LeakSanitizer shows
  bool quiet = false;
  bool fold_frames = true;
  report::Demangle demangle = report::Demangle::Full;
  std::string color = "auto";  // --color auto|always|never
  bool gen_suppressions = false;
  std::string gen_suppressions_word = "no";  // --gen-suppressions[=all|yes|no]
};

// What the analysis judges and how (run, report, snapshot): it becomes AnalysisOptions.
struct AnalysisChoices {
  // The checks' own options, which the command line fills in place: a check's new option is its
  // field (tool/checks/) and one add_option line in options.cpp.
  CheckOptions checks;
  std::vector<std::string> suppression_files;
  std::vector<std::string> keep_patterns;                        // --keep-only: the allow-list
  std::vector<std::string> kernel_names, kernel_names_excluded;  // --kernel-name, --kernel-name-exclude
  std::string nvdisasm;                                          // --nvdisasm
  std::vector<std::string> process_filters;                      // --target-processes-filter
  std::string baseline_file;                                     // diff: the older report
  bool builtin_suppressions = true;
  bool print_builtin_suppressions = false;
};

// How the program runs and what the injection records (run only).
struct RunOptions {
  std::vector<std::string> program;  // program and its arguments
  std::string save_dir;
  std::string output;  // --output NAME: --save NAME --json NAME/report.json
  std::string injection_path;
  bool require_cuda_init = true;
  std::string target_processes = "all";
  unsigned sample_interval_ms = 10;
  bool check_launch_params = true;
  bool python_hooks = true;              // --python-hooks
  bool track_resources = false;          // --track-resources
  bool device_heap = false;              // --device-heap: the Compute Sanitizer API instead of CUPTI
  unsigned snapshot_interval_ms = 0;     // --snapshot-interval: interim reports while it runs (0: none)
  std::string metrics_address;           // --metrics HOST:PORT: serve Prometheus metrics while it runs
  std::string metrics_file;              // --metrics-file FILE: write them there (node_exporter's textfile collector)
  unsigned metrics_interval_ms = 15000;  // --metrics-interval: how often they are made anew
  // --mode watch: a service left running for days (docs/LONG_RUNNING.md): stacks of a sample of
  // allocations, no launch checks.
  bool watch = false;
  uint64_t stack_sample_bytes = 512 * 1024;     // --stack-sample-bytes: mean bytes between two sampled stacks
  uint64_t stack_exact_bytes = 1024 * 1024;     // --stack-exact-bytes: allocations this big always have theirs
  uint64_t trace_compact_bytes = 256ull << 20;  // --trace-compact-bytes: compact a trace grown this much (0: never)
};

// One command line: the command and the groups it reads (run: out, analysis, run; report and
// snapshot: out, analysis, run_dir; merge: out, merge_inputs; diff: out.error_exitcode,
// analysis.baseline_file, run_dir).
struct Options {
  Command command = Command::Run;
  OutputOptions out;
  AnalysisChoices analysis;
  RunOptions run;
  // report, snapshot (a snapshot may name the process instead of its run directory), diff (the newer report)
  std::string run_dir;
  // merge
  std::vector<std::string> merge_inputs;
  // suppressions: what to do (import) and the file it reads
  std::string suppressions_action;
  std::string suppressions_input;
  // What set the options, for the report ("options in effect"): the options file's and
  // CUAUDIT_OPTIONS's words, then the command line's up to the program.
  DefaultOptions defaults;
  std::vector<std::string> options_from_command_line;
};

// Parses argv. On --help/--version or a usage error prints what is needed and returns the exit
// status to end with; otherwise returns nullopt with `options` filled.
std::optional<int> parse_command_line(int argc, char** argv, Options& options);

}  // namespace cuaudit
