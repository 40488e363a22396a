#include "options.h"

#include <CLI/CLI.hpp>
#include <cstring>
#include <iostream>
#include <map>

#include "exit_codes.h"

#ifndef CUAUDIT_VERSION
#define CUAUDIT_VERSION "unknown"
#endif

namespace cuaudit {
namespace {

// An option whose words (`yes`/`no`, `full`/`summary`/`no`) are read into a typed setting: the
// help and the error for a wrong word list the words, as users type them.
template <typename T>
CLI::Option* add_choice(CLI::App& app, const std::string& name, T& target, const std::map<std::string, T>& words,
                        const std::string& help, const std::string& default_word) {
  std::vector<std::string> names;
  for (const auto& [word, value] : words) names.push_back(word);
  return app
      .add_option_function<std::string>(
          name, [&target, words](const std::string& word) { target = words.at(word); }, help)
      ->check(CLI::IsMember(names))
      ->default_str(default_word);
}

const std::map<std::string, bool> kYesNo = {{"yes", true}, {"no", false}};

void add_output_options(CLI::App& app, Options& o) {
  add_choice(
      app, "--leak-check", o.leak_check,
      {{"full", report::LeakDetail::Full}, {"summary", report::LeakDetail::Summary}, {"no", report::LeakDetail::None}},
      "full: every leak with its allocation stack; summary: totals only; no: do not check leaks", "full");
  app.add_option("--error-exitcode", o.error_exitcode,
                 "exit with N when unsuppressed findings of severity error exist (the CI gate)");
  app.add_option("--log-file", o.log_file, "write the text report to FILE instead of stderr (%p: pid, %q{ENV}, %%)");
  app.add_option("--json", o.json_file, "write the JSON report (schema cuaudit.report.v1) to FILE");
  app.add_option("--sarif", o.sarif_file, "write SARIF 2.1.0 (for code scanning) to FILE");
  app.add_option("--html", o.html_file, "write a self-contained HTML report (works offline) to FILE");
  app.add_option("--junit", o.junit_file, "write JUnit XML (one test case per finding kind per process) to FILE");
  app.add_option("--source-root", o.source_root,
                 "SARIF locations are relative to DIR; HTML shows source lines only from files under it (default: the working directory)");
  app.add_option("--path-map", o.path_maps,
                 "OLD=NEW: show source paths recorded under OLD as under NEW (a run recorded in a container or on "
                 "a build machine); repeatable, the first match wins")
      ->take_all()
      ->allow_extra_args(false);
  app.add_option("--strip-path-prefix", o.strip_prefixes,
                 "PREFIX: show source paths under PREFIX relative to it (as LeakSanitizer's strip_path_prefix); "
                 "repeatable")
      ->take_all()
      ->allow_extra_args(false);
  app.add_option("--print-limit", o.print_limit, "print at most N findings in the text report (0: all)")
      ->default_str("100");
  app.add_option("--num-callers", o.num_callers, "frames shown per stack (0: all)")->default_str("0");
  app.add_option("--suppressions", o.suppression_files,
                 "suppress the findings a rule in FILE matches (KIND:PATTERN per line; repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  add_choice(app, "--builtin-suppressions", o.builtin_suppressions, kYesNo,
             "yes: memory that known framework allocators (PyTorch, cuBLAS, CuPy, RMM, ...) hold on purpose "
             "is reported as held_by_allocator (info), not as leaks, and cuBLAS's host alpha/beta pointers "
             "are not host_pointer_param; no: report them all",
             "yes");
  app.add_flag("--print-builtin-suppressions", o.print_builtin_suppressions,
               "print the built-in held_by_allocator rules and exit");
  app.add_option("--baseline", o.baseline_file,
                 "a JSON report of an earlier run: only findings not in it fail the gate (new, still present "
                 "and fixed are listed)");
  app.add_flag("--gen-suppressions", o.gen_suppressions, "print under each finding a rule that would suppress it");
  app.add_option("--churn-threshold", o.churn_threshold,
                 "allocation_churn is a warning (not info) when a site's allocation and release calls took at "
                 "least PERCENT of the run")
      ->check(CLI::Range(0.0, 100.0));
  app.add_flag("--check-api-results", o.check_api_results,
               "also warn, once per call site, where a CUDA call's result is discarded even when it succeeded");
}

constexpr const char* kFooter =
    "Exit status: the program's own status when nothing is found; --error-exitcode N when findings exist;\n"
    "122 when nothing could be tracked; 125 when cuaudit itself failed; 126/127 when the program cannot\n"
    "be executed or found. See docs/EXIT_CODES.md.";

}  // namespace

std::optional<int> parse_command_line(int argc, char** argv, Options& o) {
  const bool report = argc > 1 && strcmp(argv[1], "report") == 0;
  const bool merge = argc > 1 && strcmp(argv[1], "merge") == 0;
  const bool diff = argc > 1 && strcmp(argv[1], "diff") == 0;
  const bool explicit_run = argc > 1 && strcmp(argv[1], "run") == 0;
  o.command = report ? Command::Report : merge ? Command::Merge : diff ? Command::Diff : Command::Run;

  CLI::App app(report  ? "cuaudit report: analyze a recorded run directory again (no GPU needed)"
               : merge ? "cuaudit merge: one report from the per-rank reports of an MPI or Slurm job"
               : diff  ? "cuaudit diff: compare two JSON reports: new, still present and fixed findings"
                       : "cuaudit: find CUDA memory leaks and misuse in a program",
               report  ? "cuaudit report"
               : merge ? "cuaudit merge"
               : diff  ? "cuaudit diff"
                       : "cuaudit");
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("cuaudit ") + CUAUDIT_VERSION);
  if (diff) {
    app.add_option("--error-exitcode", o.error_exitcode, "exit with N when the new report has new errors");
    app.add_option("old", o.baseline_file, "the earlier JSON report (or --output directory)")->required();
    app.add_option("new", o.run_dir, "the later JSON report (or --output directory)")->required();
  } else if (merge) {
    app.add_option("--json", o.json_file, "write the merged JSON report to FILE");
    app.add_option("--sarif", o.sarif_file, "write the merged report as SARIF 2.1.0 to FILE");
    app.add_option("--junit", o.junit_file, "write the merged report as JUnit XML to FILE");
    app.add_option("--html", o.html_file, "write the merged report as a self-contained HTML page to FILE");
    app.add_option("--source-root", o.source_root,
                   "SARIF locations are relative to DIR; HTML shows source lines only from files under it (default: the working directory)");
    app.add_option("--log-file", o.log_file, "write the text summary to FILE instead of stderr");
    app.add_option("--error-exitcode", o.error_exitcode, "exit with N when the merged report has errors");
    app.add_option("inputs", o.merge_inputs, "JSON reports, or directories written by --output, in rank order")
        ->required();
  } else {
    add_output_options(app, o);
  }
  if (report) {
    app.add_option("run_dir", o.run_dir, "a directory written by `cuaudit --save DIR`")->required();
  } else if (!merge && !diff) {
    app.add_option("--save", o.save_dir,
                   "keep the recorded run in DIR, for `cuaudit report DIR` later (%p: cuaudit's pid, %q{ENV})");
    app.add_option("--output", o.output,
                   "keep the run in NAME and write NAME/report.json: one name per MPI rank with "
                   "%q{OMPI_COMM_WORLD_RANK}, combined by `cuaudit merge`");
    app.add_option("--injection-path", o.injection_path, "the libcuaudit-injection.so to load into the program");
    add_choice(app, "--require-cuda-init", o.require_cuda_init, kYesNo,
               "yes: exit 122 when the program never initialized CUDA; no: accept it", "yes");
    app.add_option("--target-processes", o.target_processes,
                   "all: the program and every process it starts; application-only: the program alone")
        ->check(CLI::IsMember({"all", "application-only"}))
        ->default_str("all");
    add_choice(app, "--check-launch-params", o.check_launch_params, kYesNo,
               "yes: check every kernel launch's pointer parameters (alignment for the pointee type, freed "
               "memory, pageable host memory); no: do not",
               "yes");
    app.add_option("--sample-interval", o.sample_interval_ms,
                   "sample each device's memory use (cuMemGetInfo) every MS milliseconds for the timeline; "
                   "0: no timeline")
        ->check(CLI::Range(0, 60000))
        ->default_str("10");
    // Everything from the program's name on belongs to the program.
    app.prefix_command();
  }

  std::vector<std::string> args;
  for (int i = argc - 1; i >= (report || merge || diff || explicit_run ? 2 : 1); --i) args.emplace_back(argv[i]);
  try {
    app.parse(args);
  } catch (const CLI::CallForVersion&) {
    std::cout << "cuaudit " << CUAUDIT_VERSION << '\n';
    return 0;
  } catch (const CLI::Success& e) {
    app.exit(e);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "cuaudit: " << e.what() << "\nRun `" << app.get_name() << " --help` for the options.\n";
    return kExitUsage;
  }
  if (!o.output.empty()) {
    if (!o.save_dir.empty()) {
      std::cerr << "cuaudit: --output NAME already saves the run in NAME; give --save or --output, not both\n";
      return kExitUsage;
    }
    o.save_dir = o.output;
    if (o.json_file.empty()) o.json_file = o.output + "/report.json";
  }
  if (o.print_builtin_suppressions) return std::nullopt;
  if (!report && !merge && !diff) {
    o.program = app.remaining();
    if (!o.program.empty() && o.program.front() == "--") o.program.erase(o.program.begin());
    if (o.program.empty()) {
      std::cerr << "cuaudit: no program given\nUsage: cuaudit [options] [--] program [args...]\n"
                   "       cuaudit report [options] RUN_DIR\nRun `cuaudit --help` for the options.\n";
      return kExitUsage;
    }
  }
  return std::nullopt;
}

}  // namespace cuaudit
