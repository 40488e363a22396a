#include "report_outputs.h"

#include <unistd.h>
#include <algorithm>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collapsed_report.h"
#include "exit_codes.h"
#include "html_report.h"
#include "json_report.h"
#include "junit_report.h"
#include "memory_viz_report.h"
#include "output_path.h"
#include "pprof_report.h"
#include "run_dir_layout.h"
#include "sarif_report.h"
#include "suppressions.h"
#include "text_report.h"
#include "trace_event_report.h"

namespace cuaudit {

// --source-root, or the working directory, with links resolved: SARIF paths are relative to it.
std::string resolved_source_root(const Options& o) {
  char cwd[PATH_MAX];
  std::string root = o.out.source_root.empty() ? (getcwd(cwd, sizeof cwd) ? cwd : "") : o.out.source_root;
  if (char resolved[PATH_MAX]; !root.empty() && realpath(root.c_str(), resolved)) root = resolved;
  return root;
}

// Where the HTML page may take source lines from: --source-root, or the working directory for a run
// recorded now (its frames were read by this cuaudit from the program's own files). A run
// directory or a report read from elsewhere may name any file (a key, /etc/shadow): none without an
// explicit --source-root.
std::string html_source_root(const Options& o) {
  if (o.out.source_root.empty() && o.command != Command::Run) return {};
  return resolved_source_root(o);
}

void say_when_html_has_no_sources(const Options& o) {
  if (!o.out.html_file.empty() && html_source_root(o).empty()) {
    std::cerr << "cuaudit: the HTML page shows no source lines: give --source-root DIR to show lines of the files "
                 "under DIR (a recorded run may name any file)\n";
  }
}

std::string idle_rules_warning(const report::Report& a) {
  std::vector<std::string> idle;
  bool keep_rules = false, keep_hit = false;
  uint64_t kept_out = 0;
  for (const report::SuppressionUse& use : a.suppressions) {
    if (use.file == "builtin") continue;
    if (use.rule.rfind("keep:", 0) == 0) {
      keep_rules = true;
      keep_hit = keep_hit || use.hits > 0;
    }
    if (use.file.empty() && use.rule == "(through no keep: rule)") {
      kept_out = use.hits;
      continue;
    }
    if (use.hits == 0)
      idle.push_back(use.line ? fmt::format("{} ({}:{})", use.rule, use.file, use.line)
                              : fmt::format("{} ({})", use.rule, use.file));
  }
  std::string out;
  if (keep_rules && !keep_hit && kept_out > 0) {
    out += fmt::format(
        "cuaudit: warning: no keep rule matched any finding, so all {} finding(s) were suppressed "
        "through no keep rule: check the --keep-only patterns\n",
        kept_out);
  }
  if (!idle.empty())
    out += fmt::format("cuaudit: warning: {} rule(s) matched nothing: {}\n", idle.size(), fmt::join(idle, ", "));
  return out;
}

namespace {

// Each file asked for, in turn.
void write_each_output(const Options& o, const report::Report& a, uint64_t pid, const std::string& text) {
  // On stderr whatever -q says: a rule that silences nothing is often a typo, and a keep rule that
  // keeps nothing has turned the gate green.
  std::cerr << idle_rules_warning(a);
  if (o.out.log_file.empty()) {
    std::cerr << text;
  } else {
    write_file_or_fail(expand_output_path(o.out.log_file, pid), text);
  }
  if (!o.out.json_file.empty()) write_file_or_fail(expand_output_path(o.out.json_file, pid), report::render_json(a));
  const std::string root = resolved_source_root(o);
  if (!o.out.sarif_file.empty())
    write_file_or_fail(expand_output_path(o.out.sarif_file, pid), report::render_sarif(a, root));
  if (!o.out.junit_file.empty()) write_file_or_fail(expand_output_path(o.out.junit_file, pid), report::render_junit(a));
  if (!o.out.html_file.empty()) {
    write_file_or_fail(expand_output_path(o.out.html_file, pid), report::render_html(a, html_source_root(o)));
    say_when_html_has_no_sources(o);
  }
  if (!o.out.perfetto_file.empty())
    write_file_or_fail(expand_output_path(o.out.perfetto_file, pid), report::render_trace_events(a));
  if (!o.out.collapsed_file.empty())
    write_file_or_fail(expand_output_path(o.out.collapsed_file, pid), report::render_collapsed(a));
  if (!o.out.pprof_file.empty()) write_file_or_fail(expand_output_path(o.out.pprof_file, pid), report::render_pprof(a));
  if (!o.out.memory_viz_file.empty())
    write_file_or_fail(expand_output_path(o.out.memory_viz_file, pid), report::render_memory_viz(a));
}

}  // namespace

// The text report (stderr or --log-file), then every machine-readable format asked for. Running out
// of memory while rendering one is cuaudit's own failure (125, never 134, which would say the
// program died of SIGABRT); what was written before stays whole (each file is replaced at once).
void write_outputs(const Options& o, const report::Report& a, uint64_t pid, const std::string& text) {
  try {
    write_each_output(o, a, pid, text);
  } catch (const std::bad_alloc&) {
    fail(kExitToolFailure, "out of memory while writing the reports");
  } catch (const std::exception& e) {
    fail(kExitToolFailure, fmt::format("cannot write the reports: {}", e.what()));
  }
}

namespace {

// Every file a report may be written to, by its option.
std::vector<std::pair<const char*, const std::string*>> report_files(const Options& o) {
  return {
      {"--log-file", &o.out.log_file},        {"--json", &o.out.json_file},   {"--sarif", &o.out.sarif_file},
      {"--junit", &o.out.junit_file},         {"--html", &o.out.html_file},   {"--perfetto", &o.out.perfetto_file},
      {"--collapsed", &o.out.collapsed_file}, {"--pprof", &o.out.pprof_file}, {"--memory-viz", &o.out.memory_viz_file}};
}

// Two outputs of one file keep only the last written, and a report written over the run's own files
// (its trace, run.json) destroys the run: both refused before any work is done.
void refuse_colliding_outputs(const Options& o) {
  namespace fs = std::filesystem;
  auto resolved = [](const std::string& path) {
    std::error_code ignored;
    const fs::path p = fs::weakly_canonical(fs::absolute(path, ignored), ignored);
    return p.empty() ? fs::path(path) : p;
  };
  const std::string run_dir = o.command == Command::Run ? o.run.save_dir : o.run_dir;
  const fs::path run = run_dir.empty() ? fs::path() : resolved(run_dir);
  std::map<fs::path, const char*> seen;
  for (const auto& [option, value] : report_files(o)) {
    if (value->empty() || *value == kStandardOutput) continue;
    std::string expanded;
    try {
      expanded = expand_output_path(*value, 0);
    } catch (const std::exception&) {
      continue;  // refused just below, with its own words
    }
    const fs::path path = resolved(expanded);
    if (auto [it, inserted] = seen.emplace(path, option); !inserted) {
      fail(kExitUsage,
           fmt::format("{} and {} both write {}: the second would replace the first; give each its own file",
                       it->second, option, *value));
    }
    if (!run.empty() && path.parent_path() == run && run_dir::is_run_entry(path.filename().string())) {
      fail(kExitUsage, fmt::format("{} {} would overwrite a file of the recorded run in {} (its trace, run.json or a "
                                   "cache): write the report elsewhere",
                                   option, *value, run_dir));
    }
  }
}

}  // namespace

// Every report file must be writable before any work is done. (--output's report.json is created
// with its directory.)
void refuse_unwritable_outputs(const Options& o) {
  // Two documents in one stream parse as neither: a consumer of `--json - --sarif -` gets garbage.
  std::vector<std::string> on_stdout;
  for (const auto& [option, value] : report_files(o)) {
    if (*value == kStandardOutput) on_stdout.push_back(option);
  }
  if (on_stdout.size() > 1) {
    fail(kExitUsage, fmt::format("{} would all write to standard output, one document after another that no reader "
                                 "can parse: give all but one of them a file",
                                 fmt::format("{} -", fmt::join(on_stdout, " -, "))));
  }
  refuse_colliding_outputs(o);
  // %q{NAME} is known now (the program inherits this environment): a bad one is refused before the
  // program runs, not after.
  std::vector<const std::string*> paths{&o.run.save_dir};
  for (const auto& [option, value] : report_files(o)) paths.push_back(value);
  for (const std::string* out : paths) {
    try {
      (void)expand_output_path(*out, 0);
    } catch (const std::exception& e) {
      fail(kExitUsage, e.what());
    }
  }
  for (const auto& [option, out] : report_files(o)) {
    if (!o.run.output.empty() && out == &o.out.json_file && o.out.json_file == o.run.output + "/report.json") continue;
    std::string why;
    if (!out->empty() && !output_path_writable(*out, why)) fail(kExitToolFailure, why);
  }
}

bool quiet_has_nothing_to_say(const Options& o, const report::Report& a) {
  return o.out.quiet && !a.nothing_tracked && !a.incomplete &&
         std::none_of(a.findings.begin(), a.findings.end(),
                      [](const report::Finding& f) { return !f.suppressed && f.severity != report::Severity::Info; });
}

std::string text_report(const Options& o, const report::Report& a) {
  if (quiet_has_nothing_to_say(o, a)) return {};  // -q: nothing worth a line
  report::TextOptions text{o.out.leak_check, o.out.print_limit, o.out.gen_suppressions ? suggest_suppression : nullptr};
  text.fold_frames = o.out.fold_frames;
  text.demangle = o.out.demangle;
  text.show_notes = o.out.show_notes;
  // auto: a terminal that is not "dumb", no NO_COLOR (no-color.org), the report not going to a file.
  const char* term = getenv("TERM");
  text.colour = o.out.color == "always" || (o.out.color == "auto" && o.out.log_file.empty() && isatty(STDERR_FILENO) &&
                                            !getenv("NO_COLOR") && term && strcmp(term, "dumb") != 0);
  return report::render_text(a, text);
}

}  // namespace cuaudit
