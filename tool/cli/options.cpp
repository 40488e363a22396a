#include "options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstring>
#include <iostream>
#include <map>

#include "command_texts.h"
#include "documentation.h"
#include "exit_codes.h"
#include "option_help.h"
#include "option_words.h"
#include "watch_options.h"

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

// A count (--print-limit, --num-callers): a negative one is refused in words, not as a huge number.
const CLI::Validator kCount(
    [](std::string& value) {
      return !value.empty() && value[0] == '-' ? std::string("expected a count, 0 or more, not " + value)
                                               : std::string();
    },
    "", "count");

constexpr const char* kSourceRootHelp =
    "SARIF locations are relative to DIR (default: the working directory); HTML shows source lines only from files "
    "under it (default: the working directory for `cuaudit run`, none for a recorded run or report, which may name any "
    "file)";

// An option that may be given again and again, each time with one value (--suppressions A
// --suppressions B); never swallowing the program that follows it.
void add_repeatable(CLI::App& app, const std::string& name, std::vector<std::string>& target, const std::string& help) {
  app.add_option(name, target, help)->take_all()->allow_extra_args(false);
}

// An exit status is 8 bits: 256 would exit 0 (the gate passing with errors), -1 would be 255.
void add_error_exitcode(CLI::App& app, Options& o, const char* help) {
  app.add_option("--error-exitcode", o.out.error_exitcode, help)->check(CLI::Range(1, 255));
}

void add_judging_options(CLI::App& app, Options& o);

// Where the reports go and how they look (then what is reported: add_judging_options).
void add_output_options(CLI::App& app, Options& o) {
  add_choice(
      app, "--leak-check", o.out.leak_check,
      {{"full", report::LeakDetail::Full}, {"summary", report::LeakDetail::Summary}, {"no", report::LeakDetail::None}},
      "full: every leak with its allocation stack; summary: totals only; no: do not check leaks", "full");
  add_error_exitcode(app, o, "exit with N when unsuppressed findings of severity error exist (the CI gate)");
  app.add_option("--log-file", o.out.log_file,
                 "write the text report to FILE instead of stderr (%p: pid, %q{ENV}, %%)");
  app.add_option("--json", o.out.json_file, "write the JSON report (schema cuaudit.report.v1) to FILE");
  app.add_option("--sarif", o.out.sarif_file, "write SARIF 2.1.0 (for code scanning) to FILE");
  app.add_option("--html", o.out.html_file, "write a self-contained HTML report (works offline) to FILE");
  app.add_option("--junit", o.out.junit_file, "write JUnit XML (one test case per finding kind per process) to FILE");
  app.add_option("--perfetto", o.out.perfetto_file,
                 "write the memory timeline and each allocation's life as Chrome trace events (ui.perfetto.dev, "
                 "chrome://tracing) to FILE");
  app.add_option(
      "--collapsed", o.out.collapsed_file,
      "write leaks, growing sites and each device's peak as collapsed stacks (flamegraph.pl, speedscope) to FILE");
  app.add_option("--pprof", o.out.pprof_file,
                 "write every allocation site's memory (over the run, at the end, at the peak) as a gzipped pprof "
                 "profile (go tool pprof) to FILE");
  app.add_option("--memory-viz", o.out.memory_viz_file,
                 "write the device memory's segments, blocks and history as a PyTorch memory snapshot (pickle) for "
                 "pytorch.org/memory_viz and torch.cuda._memory_viz to FILE");
  app.add_option("--source-root", o.out.source_root, kSourceRootHelp);
  add_repeatable(app, "--path-map", o.out.path_maps,
                 "OLD=NEW: show source paths recorded under OLD as under NEW (a run recorded in a container or on "
                 "a build machine); repeatable, the first match wins");
  add_repeatable(app, "--strip-path-prefix", o.out.strip_prefixes,
                 "PREFIX: show source paths under PREFIX relative to it (as LeakSanitizer's strip_path_prefix); "
                 "repeatable");
  add_repeatable(app, "--debug-file-directory", o.out.debug_dirs,
                 "DIR: look for separate debug files of stripped libraries under DIR (DIR/.build-id/ab/cdef.debug by "
                 "the recorded build id, as gdb's debug-file-directory) before /usr/lib/debug; repeatable. "
                 "DEBUGINFOD_URLS' servers are asked too");
  app.add_option("--print-limit", o.out.print_limit, "print at most N findings in the text report (0: all)")
      ->check(kCount)
      ->default_str("100");
  app.add_option("--num-callers", o.out.num_callers, "keep N frames per stack, in every format (0: all)")
      ->check(kCount)
      ->default_str("30");
  add_choice(app, "--fold-frames", o.out.fold_frames, kYesNo,
             "yes: in the text report, runs of frames inside Python's libraries and interpreter and below main "
             "are one line with their count; no: every frame (JSON and HTML always have every frame)",
             "yes");
  add_choice(app, "--demangle", o.out.demangle,
             {{"full", report::Demangle::Full}, {"simple", report::Demangle::Simple}, {"no", report::Demangle::None}},
             "full: C++ functions with parameters and template arguments in the text report; simple: the name "
             "alone; no: as linked (mangled)",
             "full");
  app.add_option("--color", o.out.color,
                 "auto: colour the text report when it goes to a terminal (not with NO_COLOR); "
                 "always; never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->default_str("auto");
  app.add_flag("--show-notes", o.out.show_notes,
               "in the text report, every note (held_by_allocator, handled errors, ...) on a line of its own, "
               "not one summary line per process");
  app.add_flag("-q,--quiet", o.out.quiet,
               "print the text report only when it has errors or warnings, or the run is not clean (as valgrind -q)");
  add_judging_options(app, o);
}

// What is reported: suppressions, the baseline, the kernel and process filters, the thresholds.
void add_judging_options(CLI::App& app, Options& o) {
  add_repeatable(app, "--suppressions", o.analysis.suppression_files,
                 "suppress the findings a rule in FILE matches (KIND:PATTERN per line; repeatable)");
  add_repeatable(app, "--keep-only", o.analysis.keep_patterns,
                 "report only findings whose stacks go through a function, file or module PATTERN matches; the "
                 "rest are suppressed (an allow-list; repeatable; keep:PATTERN in a suppression file)");
  add_choice(app, "--builtin-suppressions", o.analysis.builtin_suppressions, kYesNo,
             "yes: memory that known framework allocators (PyTorch, cuBLAS, CuPy, RMM, ...) hold on purpose "
             "is reported as held_by_allocator (info), not as leaks, and cuBLAS's host alpha/beta pointers "
             "are not host_pointer_param; no: report them all",
             "yes");
  app.add_flag("--print-builtin-suppressions", o.analysis.print_builtin_suppressions,
               "print the built-in held_by_allocator rules and exit");
  app.add_option("--baseline", o.analysis.baseline_file,
                 "FILE: a JSON report of an earlier run: only findings not in it fail the gate (new, still present "
                 "and fixed are listed)");
  app.add_flag("--gen-suppressions{all}", o.out.gen_suppressions_word,
               "print under each finding a rule that would suppress it (--gen-suppressions, =all, =yes; =no: "
               "do not)")
      ->check(CLI::IsMember({"all", "yes", "no"}));
  add_repeatable(app, "--kernel-name", o.analysis.kernel_names,
                 "report launch findings only of kernels whose name contains TEXT (TEXT or kns=TEXT; kne=NAME: "
                 "exactly NAME); repeatable");
  add_repeatable(app, "--kernel-name-exclude", o.analysis.kernel_names_excluded,
                 "do not report launch findings of kernels matching TEXT, kns=TEXT or kne=NAME; repeatable");
  app.add_option("--nvdisasm", o.analysis.nvdisasm,
                 "FILE: the CUDA toolkit's nvdisasm, for what each kernel's machine code requires of its pointer "
                 "parameters (default: CUAUDIT_NVDISASM, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)");
  add_repeatable(app, "--target-processes-filter", o.analysis.process_filters,
                 "report only processes whose executable name or command line contains TEXT (kns=TEXT; kne=NAME: "
                 "the executable's name exactly); repeatable");
  app.add_option("--churn-threshold", o.analysis.checks.churn.warn_percent,
                 "allocation_churn is a warning (not info) when a site's allocation and release calls took at "
                 "least PERCENT of the run")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--fragmentation-threshold", o.analysis.checks.fragmentation.threshold_percent,
                 "report a pool as fragmented when requests kept not fitting in its free memory although enough was "
                 "free and it was at least PERCENT fragmented then, or a heap that cannot grow stayed that fragmented "
                 "while at least half full (1 - largest hole / free; default 30)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_flag("--check-api-results", o.analysis.checks.check_api_results,
               "also warn, once per call site, where a CUDA call's result is discarded even when it succeeded");
}

void add_run_options(CLI::App& app, Options& o) {
  app.add_option("--save", o.run.save_dir,
                 "keep the recorded run in DIR, for `cuaudit report DIR` later (%p: cuaudit's pid, %q{ENV})");
  app.add_option("--output", o.run.output,
                 "keep the run in NAME and write NAME/report.json: one name per MPI rank with "
                 "%q{OMPI_COMM_WORLD_RANK}, combined by `cuaudit merge`");
  app.add_option("--injection-path", o.run.injection_path,
                 "FILE: the libcuaudit-injection.so to load into the program");
  add_choice(app, "--require-cuda-init", o.run.require_cuda_init, kYesNo,
             "yes: exit 122 when the program never initialized CUDA; no: accept it", "yes");
  app.add_option("--target-processes", o.run.target_processes,
                 "all: the program and every process it starts; application-only: the program alone")
      ->check(CLI::IsMember({"all", "application-only"}))
      ->default_str("all");
  add_choice(app, "--check-launch-params", o.run.check_launch_params, kYesNo,
             "yes: check every kernel launch's pointer parameters (alignment for the pointee type, freed "
             "memory, pageable host memory); no: do not",
             "yes");
  add_choice(app, "--python-hooks", o.run.python_hooks, kYesNo,
             "yes: in Python programs, follow the blocks PyTorch's caching allocator and CuPy's memory pool hand out, "
             "and JAX's arrays inside XLA's allocator (through their own memory history, hooks and live arrays, "
             "started when the program imports them); no: see only their CUDA allocations",
             "yes");
  app.add_flag("--track-resources", o.run.track_resources,
               "also record streams, events, graphs, executable graphs, modules, libraries, texture and surface "
               "objects, memory pools and external memory, and report those never destroyed (resource_leak)");
  app.add_flag("--device-heap", o.run.device_heap,
               with_documentation_paths(
                   "record kernels' device-side malloc and free (and new/delete) through the Compute Sanitizer API "
                   "instead of CUPTI, and report device heap leaks, double and invalid frees and an exhausted heap; "
                   "host allocations are still tracked, launch parameters and unchecked errors are not "
                   "(docs/RESOURCES.md)"));
  app.add_option_function<std::string>(
         "--snapshot-interval",
         [&o](const std::string& text) {
           const auto ms = parse_duration_ms(text);
           if (!ms || *ms == 0)
             throw CLI::ValidationError("--snapshot-interval", "expected a duration such as 30s, 10m or 1h");
           o.run.snapshot_interval_ms = static_cast<unsigned>(std::min<uint64_t>(*ms, UINT32_MAX));
         },
         "while the program runs, write an interim report every DURATION (30s, 10m, 1h): JSON, and HTML with "
         "--html, numbered next to the final one (report.snapshot-1.json, ...); each is complete on its own")
      ->type_name("DURATION");
  app.add_option("--metrics", o.run.metrics_address,
                 with_documentation_paths(
                     "while the program runs, serve its memory as Prometheus metrics at http://HOST:PORT/metrics "
                     "(live bytes by site, device and pool, fragmentation, growth, findings; docs/LONG_RUNNING.md); "
                     ":PORT listens on loopback"))
      ->type_name("HOST:PORT");
  app.add_option("--metrics-file", o.run.metrics_file,
                 "while the program runs, write the same metrics to FILE (replaced at each refresh; for "
                 "node_exporter's textfile collector, name it *.prom in its directory)")
      ->type_name("FILE");
  app.add_option_function<std::string>(
         "--metrics-interval",
         [&o](const std::string& text) {
           const auto ms = parse_duration_ms(text);
           if (!ms || *ms < 100)
             throw CLI::ValidationError("--metrics-interval", "expected a duration of 100ms or more, such as 15s");
           o.run.metrics_interval_ms = static_cast<unsigned>(std::min<uint64_t>(*ms, UINT32_MAX));
         },
         "how often --metrics and --metrics-file are made anew from the traces (default 15s; each refresh reads "
         "the run so far, as `cuaudit snapshot` does)")
      ->type_name("DURATION");
  add_watch_options(app, o.run);
  app.add_option("--sample-interval", o.run.sample_interval_ms,
                 "sample each device's memory use (cuMemGetInfo) every MS milliseconds for the timeline "
                 "(default 10; 1000 with --mode watch); 0: no timeline")
      ->check(CLI::Range(0, 60000));
}

void add_command_options(CLI::App& app, Command command, Options& o) {
  switch (command) {
    case Command::Diff:
      add_error_exitcode(app, o, "exit with N when the new report has new errors");
      app.add_option("--json", o.out.json_file,
                     "write the comparison (new, still present and fixed findings; each device's peak by site) as "
                     "JSON, schema cuaudit.diff.v1, to FILE; - for standard output");
      app.add_option("OLD", o.analysis.baseline_file, "the earlier JSON report (or --output directory)")->required();
      app.add_option("NEW", o.run_dir, "the later JSON report (or --output directory)")->required();
      return;
    case Command::Suppressions:
      app.add_option("ACTION", o.suppressions_action, "import: read compute-sanitizer's records")->required();
      app.add_option("FILE", o.suppressions_input, "a file of compute-sanitizer --xml yes --save FILE")->required();
      return;
    case Command::Merge:
      app.add_option("--json", o.out.json_file, "write the merged JSON report to FILE");
      app.add_option("--sarif", o.out.sarif_file, "write the merged report as SARIF 2.1.0 to FILE");
      app.add_option("--junit", o.out.junit_file, "write the merged report as JUnit XML to FILE");
      app.add_option("--html", o.out.html_file, "write the merged report as a self-contained HTML page to FILE");
      app.add_option("--source-root", o.out.source_root, kSourceRootHelp);
      app.add_option("--log-file", o.out.log_file, "write the text summary to FILE instead of stderr");
      add_error_exitcode(app, o, "exit with N when the merged report has errors");
      app.add_flag("-q,--quiet", o.out.quiet,
                   "print the summary only when the merged report has errors or warnings, or is incomplete");
      app.add_option("REPORT", o.merge_inputs, "JSON reports, or directories written by --output, in rank order")
          ->required();
      return;
    case Command::Snapshot:
      add_output_options(app, o);
      app.add_option("RUN_DIR|PID", o.run_dir,
                     "the run directory of a program running under cuaudit (--save DIR), or the pid of the program "
                     "or of the cuaudit that runs it")
          ->required();
      return;
    case Command::Report:
      add_output_options(app, o);
      app.add_option("RUN_DIR", o.run_dir, "a directory written by `cuaudit --save DIR`")->required();
      return;
    case Command::Run:
      add_output_options(app, o);
      add_run_options(app, o);
      // Everything from the program's name on belongs to the program.
      app.prefix_command();
      return;
  }
}

// The defaults (option_defaults.h), then the command line's words from `first`; parsed into `o`.
// An exit status when parsing ends the run (--help, errors).
std::optional<int> parse_words(CLI::App& app, int argc, char** argv, int first, Options& o) {
  std::vector<std::string> words;
  // merge, diff and suppressions take only the defaults' options they know.
  const bool fewer = o.command != Command::Run && o.command != Command::Report && o.command != Command::Snapshot;
  CLI::App every;  // never parsed: every option of run and report, to tell the others' apart
  Options scratch;
  if (fewer) add_command_options(every, Command::Run, scratch);
  try {
    o.defaults = read_default_options();
    words = default_words(o.defaults, app, fewer ? &every : nullptr);
  } catch (const std::invalid_argument& e) {
    std::cerr << "cuaudit: " << e.what() << '\n';
    return kExitUsage;
  }
  for (int i = first; i < argc; ++i) words.emplace_back(argv[i]);
  std::vector<std::string> args(words.rbegin(), words.rend());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::CallForVersion&) {
    std::cout << version_text() << '\n';
    return 0;
  } catch (const CLI::Success& e) {
    app.exit(e);
    return 0;
  } catch (const CLI::ExtrasError&) {
    // The first word like an option that this command does not know (`--json X --perfetto Y` to merge,
    // which has no --perfetto, names --perfetto, not --json).
    const auto unknown = std::find_if(words.begin(), words.end(), [&app](const std::string& w) {
      return w.size() > 1 && w[0] == '-' && w != "--" && !app.get_option_no_throw(w.substr(0, w.find('=')));
    });
    std::cerr << "cuaudit: "
              << (unknown != words.end() ? unknown_option_message(app, *unknown) : std::string("unexpected arguments"))
              << "\nRun `" << app.get_name() << " --help` for the options.\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    std::cerr << "cuaudit: " << e.what() << "\nRun `" << app.get_name() << " --help` for the options.\n";
    return kExitUsage;
  }
  return std::nullopt;
}

// The program to run, from the words CLI11 left: an exit status when there is none or it looks
// like an option.
std::optional<int> take_program(const CLI::App& app, Options& o) {
  // With the program's arguments left to it, the first word CLI11 did not take is the program;
  // one that looks like an option is a misspelled or unknown one, never a program to run.
  std::vector<std::string>& program = o.run.program;
  if (!program.empty() && program.front().size() > 1 && program.front()[0] == '-' && program.front() != "--") {
    std::cerr << "cuaudit: " << unknown_option_message(app, program.front())
              << "\nRun `cuaudit --help` for the options; put `--` before a program whose name starts with '-'.\n";
    return kExitUsage;
  }
  if (!program.empty() && program.front() == "--") program.erase(program.begin());
  if (program.empty()) {
    std::cerr << "cuaudit: no program given\n"
              << text_of(Command::Run).usage << "Run `cuaudit --help` for the options.\n";
    return kExitUsage;
  }
  return std::nullopt;
}

// `words` as the command line, parsed into a fresh `o`.
std::optional<int> parse_words_again(const std::vector<std::string>& words, Options& o) {
  std::vector<char*> argv;
  for (const std::string& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  o = Options();
  return parse_command_line(static_cast<int>(words.size()), argv.data(), o);
}

// `cuaudit help [COMMAND]`: the command's --help (the run command's without one).
std::optional<int> help_command(int argc, char** argv, Options& o) {
  std::vector<std::string> words = {argv[0]};
  if (argc > 2) {
    if (!command_named(argv[2])) {
      const auto guess = closest_word(argv[2], command_words());
      std::cerr << "cuaudit: no command " << argv[2] << (guess ? " (did you mean " + *guess + "?)" : std::string())
                << "\nThe commands: run, report, snapshot, merge, diff, suppressions. Run `cuaudit --help`.\n";
      return kExitUsage;
    }
    words.emplace_back(argv[2]);
  }
  words.emplace_back("--help");
  return parse_words_again(words, o);
}

}  // namespace

std::optional<int> parse_command_line(int argc, char** argv, Options& o) {
  if (argc > 1 && strcmp(argv[1], "help") == 0) return help_command(argc, argv, o);
  o.command = argc > 1 ? command_named(argv[1]).value_or(Command::Run) : Command::Run;
  const bool run = o.command == Command::Run;
  const bool explicit_run = argc > 1 && strcmp(argv[1], "run") == 0;
  const CommandText& text = text_of(o.command);
  CLI::App app(text.title, text.name);
  app.formatter(std::make_shared<UsageFormatter>(text.usage));
  app.footer(with_documentation_paths(text.footer));
  // An option given twice (once in CUAUDIT_OPTIONS, once on the command line) takes the last.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("-V,--version", version_text());
  add_command_options(app, o.command, o);
  name_placeholders(app);
  const int first = !run || explicit_run ? 2 : 1;
  if (auto done = parse_words(app, argc, argv, first, o)) return done;
  if (!o.run.output.empty()) {
    if (!o.run.save_dir.empty()) {
      std::cerr << "cuaudit: --output NAME already saves the run in NAME; give --save or --output, not both\n";
      return kExitUsage;
    }
    o.run.save_dir = o.run.output;
    if (o.out.json_file.empty()) o.out.json_file = o.run.output + "/report.json";
  }
  if (o.command == Command::Run)
    if (auto refused = check_watch_options(app, o.run)) return refused;
  o.out.gen_suppressions = o.out.gen_suppressions_word == "all" || o.out.gen_suppressions_word == "yes";
  if (o.analysis.print_builtin_suppressions) return std::nullopt;
  if (run) o.run.program = app.remaining();
  // Options before a command (`cuaudit -q report RUN`): the command's own, in the command's order. A
  // program named like a command runs after `--` (`cuaudit -- report`) or with its path.
  if (run && !explicit_run && !o.run.program.empty() && command_named(o.run.program.front())) {
    std::vector<std::string> words = {argv[0], o.run.program.front()};
    words.insert(words.end(), argv + first, argv + argc - o.run.program.size());
    words.insert(words.end(), o.run.program.begin() + 1, o.run.program.end());
    return parse_words_again(words, o);
  }
  const int command_line_words = argc - first;
  if (o.run.program.size() > static_cast<size_t>(command_line_words)) {
    std::cerr << "cuaudit: CUAUDIT_OPTIONS and " << (o.defaults.file.empty() ? ".cuauditrc" : o.defaults.file)
              << " hold options only, not a program or `--`\n";
    return kExitUsage;
  }
  // The command line's words up to the program (for `report`, with the run directory).
  o.options_from_command_line.assign(argv + first, argv + argc - o.run.program.size());
  if (run) return take_program(app, o);
  return std::nullopt;
}

}  // namespace cuaudit
