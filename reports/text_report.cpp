#include "text_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "fingerprint.h"
#include "pool_text.h"
#include "profile_stacks.h"
#include "text_helpers.h"

namespace cuaudit::report {
namespace {

// --demangle simple: the function without parameters and template arguments, as compute-sanitizer
// prints it ("at::native::add_out" for a 400-character signature).
std::string simple_name(const std::string& fn) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < fn.size(); ++i) {
    const char c = fn[i];
    if (c == '<' && fn.compare(i, 7, "<lambda") != 0 && fn.compare(i, 8, "<unnamed") != 0) {
      ++depth;
    } else if (c == '>' && depth > 0) {
      --depth;
    } else if (depth == 0) {
      if (c == '(' && fn.compare(i, 21, "(anonymous namespace)") != 0) break;  // the parameter list
      out += c;
    }
  }
  // A return type in front ("void f") goes too; "(anonymous namespace)" holds a space of its own.
  for (size_t space; (space = out.find(' ')) != std::string::npos && out.find('(') > space;) out.erase(0, space + 1);
  return out.empty() ? fn : out;
}

std::string format_frame(size_t index, const Frame& frame, const TextOptions& options) {
  Frame f = frame;
  if (options.demangle == Demangle::Simple && f.module != "python") f.function = simple_name(f.function);
  if (options.demangle == Demangle::None && !f.mangled.empty()) f.function = f.mangled;
  std::string where;
  if (!f.file.empty()) {
    where = f.line > 0 ? fmt::format("{}:{}", f.file, f.line) : f.file;
  } else if (!f.module.empty()) {
    where = fmt::format("({})", basename_of(f.module));
  }
  if (f.pc == 0 && f.module == "python") return fmt::format("#{} {} in {}", index, where, f.function);  // no address
  return fmt::format("#{} 0x{:x} in {} {}", index, f.pc, f.function.empty() ? "??" : f.function, where);
}

class Writer {
 public:
  Writer(std::string prefix, bool colour) : prefix_(std::move(prefix)), colour_(colour) {}
  // `style`: an SGR code ("1;31") used when colour is on. The text is made visible first, so the
  // only escapes in the output are cuaudit's own.
  void line(const std::string& text = {}, const char* style = nullptr) {
    out_ += prefix_;
    if (!text.empty()) {
      out_ += ' ';
      if (colour_ && style) out_ += fmt::format("\x1b[{}m", style);
      out_ += visible(text);
      if (colour_ && style) out_ += "\x1b[0m";
    }
    out_ += '\n';
  }
  std::string take() { return std::move(out_); }

 private:
  std::string prefix_;
  bool colour_;
  std::string out_;
};

const char* severity_style(Severity s) {
  return s == Severity::Error ? "1;31" : s == Severity::Warning ? "1;33" : "34";
}

// What a run of frames is folded as, when it is one of those a reader rarely needs: Python's
// libraries and standard library (for Python stacks), the interpreter (in native stacks of a
// Python program), or what lies below main. Empty: shown.
std::string fold_group(const Frame& f, bool below_main) {
  if (below_main) return "below main";
  const std::string& file = f.file;
  if (f.module == "python") {
    if (file.find("/site-packages/") != std::string::npos || file.find("/dist-packages/") != std::string::npos ||
        file.rfind("<frozen", 0) == 0 || file.find("/lib/python3") != std::string::npos)
      return "in Python libraries";
    return {};
  }
  if (is_interpreter_frame(f)) return "in the Python interpreter";
  return {};
}

void write_stack(Writer& w, const std::vector<Frame>& stack, uint64_t omitted, const TextOptions& options) {
  const bool fold = options.fold_frames;
  bool below_main = false;
  for (size_t i = 0; i < stack.size();) {
    const std::string group = fold ? fold_group(stack[i], below_main) : std::string();
    size_t end = i + 1;
    while (!group.empty() && end < stack.size() && fold_group(stack[end], below_main) == group) ++end;
    // A run of three or more keeps its first frame (where the library was entered) and folds the rest.
    if (!group.empty() && end - i >= 3) {
      w.line("    " + format_frame(i, stack[i], options));
      w.line(fmt::format("    ... {} more frame(s) {} (--fold-frames no shows them)", end - i - 1, group));
      i = end;
      continue;
    }
    for (; i < end; ++i) {
      w.line("    " + format_frame(i, stack[i], options));
      below_main = below_main || stack[i].function == "main" || stack[i].function.rfind("main(", 0) == 0;
    }
  }
  if (stack.empty()) w.line("    (no host stack was recorded)");
  if (omitted) w.line(fmt::format("    Omitting {} more frame(s)", omitted));
}

std::string describe_end(const Process& p) {
  if (p.signal) return fmt::format("killed by {}", *p.signal);
  if (p.exit_code) return fmt::format("exit code {}", *p.exit_code);
  return "exit status unknown";
}

// "2 errors, 1 warning, 13 notes": unsuppressed findings by severity (errors as the summary counts
// them: with a baseline, the new ones), so notes never read as problems.
std::string severity_counts(const Summary& s, const std::vector<Finding>& findings, std::optional<uint64_t> pid) {
  uint64_t warnings = 0, notes = 0;
  for (const Finding& f : findings) {
    if (f.suppressed || (pid && f.pid != *pid)) continue;
    warnings += f.severity == Severity::Warning;
    notes += f.severity == Severity::Info;
  }
  auto count = [](uint64_t n, const char* one, const char* many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
  };
  std::string text = count(s.error_findings, "error", "errors");
  if (warnings) text += ", " + count(warnings, "warning", "warnings");
  if (notes) text += ", " + count(notes, "note", "notes");
  return text;
}

}  // namespace

namespace {

// Devices are named when a process has several: every finding then says which it is about.
std::string device_name(const Process& p, int ordinal) {
  for (const DeviceDescription& d : p.devices) {
    if (d.ordinal == ordinal && !d.name.empty()) return fmt::format("device {} ({})", ordinal, d.name);
  }
  return fmt::format("device {}", ordinal);
}

void write_process_header(Writer& w, const Process& p) {
  w.line(fmt::format("Process {}{}: {} ({}; {} allocation(s), {} release(s) tracked)", p.pid,
                     p.parent_pid ? fmt::format(" (parent {})", p.parent_pid) : std::string(), join_words(p.command),
                     describe_end(p), p.allocations, p.releases));
  if (p.devices.size() > 1) {
    std::string devices;
    for (const DeviceDescription& d : p.devices) {
      devices += fmt::format("{}{} {}", devices.empty() ? "" : ", ", d.ordinal, d.name.empty() ? "?" : d.name);
      if (d.total) devices += fmt::format(" ({})", human_bytes(d.total));
    }
    w.line("  devices: " + devices);
  }
  for (const auto& note : p.notes) w.line("  note: " + note);
  w.line();
}

void write_finding(Writer& w, const Finding& f, const Process& p, const TextOptions& options) {
  if (f.severity == Severity::Info) {  // for the record: one line and where, no story
    w.line(f.headline + " " + (f.stack.empty() ? std::string("(no stack)") : format_frame(0, f.stack[0], options)),
           severity_style(f.severity));
    return;
  }
  w.line((f.baseline == BaselineStatus::StillPresent ? "[in baseline] "
          : f.baseline == BaselineStatus::New        ? "[new] "
                                                     : "") +
             f.headline,
         severity_style(f.severity));
  if (p.devices.size() > 1 && f.device) w.line("  on " + device_name(p, *f.device));
  write_stack(w, f.stack, f.omitted_frames, options);
  for (const auto& r : f.related) {
    w.line("  " + r.title);
    write_stack(w, r.stack, r.omitted_frames, options);
  }
  if (f.fragmentation) {
    const auto where = [&](const Frame& frame) {
      const std::string shown = format_frame(0, frame, options);  // "#0 0x... in fn file:line"
      const size_t in = shown.find(" in ");
      return in == std::string::npos ? shown : shown.substr(in + 4);
    };
    for (const std::string& line : picture_lines(f.fragmentation->picture, where)) w.line(line);
  }
  for (const auto& note : f.notes) w.line("    " + note);
  if (options.suggest_suppression) w.line("  suppression: " + options.suggest_suppression(f));
  w.line();
}

void write_peaks(Writer& w, const Report& report, const Process& p, const TextOptions& options) {
  for (const DevicePeak& peak : report.timeline.peaks) {
    if (peak.pid != p.pid) continue;
    const uint64_t gap = peak.used > peak.tracked ? peak.used - peak.tracked : 0;
    std::string families;
    for (const auto& [family, bytes] : peak.families) {
      families += fmt::format("{}{} {}", families.empty() ? " (" : ", ", family, human_bytes(bytes));
    }
    if (!families.empty()) families += ")";
    w.line(
        fmt::format("Memory on {}: peak {} in use at {:.3f} s; the program held {}{}, the other {} were "
                    "contexts, libraries and memory cuaudit cannot see",
                    p.devices.size() > 1 ? device_name(p, peak.device) : fmt::format("device {}", peak.device),
                    human_bytes(peak.used), peak.t, human_bytes(peak.tracked), families, human_bytes(gap)));
    for (const PeakSite& site : peak.sites) {
      w.line(fmt::format("  held at the peak: {} in {} allocation(s) ({}) {}", human_bytes(site.bytes), site.count,
                         site.api,
                         !site.site.empty()   ? "at " + site.site
                         : site.stack.empty() ? std::string("(no stack)")
                                              : format_frame(0, site.stack[0], options)));
    }
    w.line();
  }
  const std::vector<std::string> pools = pool_series_lines(report.timeline, p.pid);
  for (const std::string& line : pools) w.line(line);
  if (!pools.empty()) w.line();
}

// A note the text report folds into its summary line without --show-notes: memory a framework holds
// on purpose, handled errors, churn under the threshold; never `live`, which is what a snapshot is for.
bool folded_note(const Finding& f, const TextOptions& options) {
  return !options.show_notes && f.severity == Severity::Info && f.kind != FindingKind::Live;
}

// "Notes: 13 held_by_allocator (1.2 GiB), 2 api_error; --show-notes lists them": a process's folded
// notes by kind, in the kinds' order; empty when there are none.
std::string notes_line(const Report& report, const Process& p, const TextOptions& options) {
  std::string line;
  for (const FindingKindInfo& kind : kFindingKinds) {
    uint64_t count = 0, bytes = 0;
    for (const Finding& f : report.findings) {
      if (f.pid != p.pid || f.suppressed || f.kind != kind.kind || !folded_note(f, options)) continue;
      ++count;
      bytes = saturating_add(bytes, f.bytes);
    }
    if (!count) continue;
    line += fmt::format("{}{} {}{}", line.empty() ? "Notes: " : ", ", count, kind.key,
                        bytes ? fmt::format(" ({})", human_bytes(bytes)) : std::string());
  }
  return line.empty() ? line : line + "; --show-notes lists them";
}

// Findings shown so far and those --print-limit withheld, across processes.
struct Printed {
  size_t shown = 0, withheld = 0;
};

// One section per process, each line under that process's pid, as valgrind does.
std::string render_process(const Report& report, const Process& p, const TextOptions& options, Printed& printed) {
  Writer w(fmt::format("=={}==", p.pid), options.colour);
  write_process_header(w, p);
  // Errors first, then warnings, then notes (as the report lists them within each severity): a
  // run's few errors are not lost among a framework's notes.
  std::vector<const Finding*> ordered;
  for (const Finding& f : report.findings) ordered.push_back(&f);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Finding* a, const Finding* b) { return a->severity < b->severity; });
  for (const Finding* found : ordered) {
    const Finding& f = *found;
    const bool shown = !f.suppressed && !(f.kind == FindingKind::Leak && options.leak_detail != LeakDetail::Full);
    if (f.pid != p.pid || !shown || folded_note(f, options)) continue;
    if (options.print_limit && printed.shown == options.print_limit) {
      ++printed.withheld;
      continue;
    }
    ++printed.shown;
    write_finding(w, f, p, options);
  }
  if (const std::string notes = notes_line(report, p, options); !notes.empty()) {
    w.line(notes, severity_style(Severity::Info));
    w.line();
  }
  write_peaks(w, report, p, options);
  if (report.processes.size() > 1) {
    const Summary s = summarize_process(report.findings, p.pid);
    w.line(fmt::format("Process {}: {} byte(s) leaked in {} allocation(s); {}", p.pid, s.leaked_bytes,
                       s.leaked_allocations, severity_counts(s, report.findings, p.pid)));
    w.line();
  }
  return w.take();
}

// What was withheld, the suppressions used (as LeakSanitizer prints them), the baseline.
void write_run_footnotes(Writer& w, const Report& report, const TextOptions& options, const Printed& printed) {
  if (printed.withheld) {
    w.line(fmt::format("{} more finding(s) not shown (--print-limit {}); all of them are in the JSON report",
                       printed.withheld, options.print_limit));
    w.line();
  }
  if (!report.suppressions.empty()) {
    w.line("Suppressions used:");
    w.line(fmt::format("  {:>6} {:>12}  {}", "count", "bytes", "rule"));
    for (const SuppressionUse& u : report.suppressions) {
      // Where the rule was written: FILE:LINE, an option's name, or nothing (the allow-list's remainder).
      const std::string origin = u.file.empty() ? std::string()
                                 : u.line       ? fmt::format("   ({}:{})", u.file, u.line)
                                                : fmt::format("   ({})", u.file);
      w.line(fmt::format("  {:>6} {:>12}  {}{}", u.hits, u.bytes, u.rule, origin));
    }
    w.line();
  }
  if (report.baseline) {
    const BaselineResult& b = *report.baseline;
    w.line(fmt::format("Baseline {}: {} new finding(s), {} still present (not gating), {} fixed", b.file,
                       b.new_findings, b.still_present, b.fixed.size()));
    for (const auto& fixed : b.fixed) w.line("  fixed: " + fixed);
    w.line();
  }
}

// The closing lines: live memory of a snapshot, the leaks, the counts by severity.
void write_summaries(Writer& w, const Report& report, const TextOptions& options) {
  const Summary& s = report.summary;
  if (report.nothing_tracked) {
    w.line("SUMMARY: cuaudit: nothing was tracked; this is not a clean result");
    return;
  }
  const std::string across =
      report.processes.size() > 1 ? fmt::format(" across {} processes", report.processes.size()) : std::string();
  // A snapshot of a running program: what it holds now, by site, before what leaked.
  uint64_t live_bytes = 0, live_allocations = 0, live_sites = 0;
  for (const Finding& f : report.findings) {
    if (f.suppressed || f.kind != FindingKind::Live) continue;
    live_bytes = saturating_add(live_bytes, f.bytes);
    live_allocations = saturating_add(live_allocations, f.count);
    ++live_sites;
  }
  if (live_sites) {
    w.line(fmt::format("LIVE SUMMARY: {} byte(s) live in {} allocation(s) from {} site(s){} (still running)",
                       live_bytes, live_allocations, live_sites, across),
           "1");
  }
  if (options.leak_detail != LeakDetail::None) {
    size_t sites = 0;
    for (const Finding& f : report.findings) sites += !f.suppressed && counts_as_leak(f.kind);
    w.line(fmt::format("LEAK SUMMARY: {} byte(s) leaked in {} allocation(s) from {} site(s){}", s.leaked_bytes,
                       s.leaked_allocations, sites, across),
           "1");
  }
  w.line(fmt::format("SUMMARY: cuaudit: {}{}", severity_counts(s, report.findings, std::nullopt), across),
         s.error_findings ? "1;31" : "1;32");
}

}  // namespace

std::string render_text(const Report& report, const TextOptions& options) {
  const uint64_t main_pid = report.processes.empty() ? 0 : report.processes.front().pid;
  Writer head(fmt::format("=={}==", main_pid), options.colour);
  head.line(fmt::format("cuaudit {}: CUDA leak and misuse checker", report.tool_version));
  if (!report.options_file.empty())
    head.line(fmt::format("options from {}: {}", report.options_file, join_words(report.options_from_file)));
  if (!report.options_from_environment.empty())
    head.line("options from CUAUDIT_OPTIONS: " + join_words(report.options_from_environment));
  for (const auto& note : report.notes) head.line("note: " + note);
  std::string out = head.take();
  Printed printed;
  for (const Process& p : report.processes) out += render_process(report, p, options, printed);
  Writer w(fmt::format("=={}==", main_pid), options.colour);
  write_run_footnotes(w, report, options, printed);
  write_summaries(w, report, options);
  return out + w.take();
}

std::string render_baseline_diff(const Report& report) {
  std::string news, still;
  size_t new_count = 0, still_count = 0;
  for (const Finding& f : report.findings) {
    if (f.suppressed) continue;
    const std::string line = fmt::format("==cuaudit diff==   {}\n", visible(describe_finding(f)));
    if (f.baseline == BaselineStatus::StillPresent) {
      still += line, ++still_count;
    } else {
      news += line, ++new_count;
    }
  }
  const std::vector<std::string> none;
  const std::vector<std::string>& fixed = report.baseline ? report.baseline->fixed : none;
  std::string out = fmt::format("==cuaudit diff== {} new finding(s):\n{}", new_count, news);
  out += fmt::format("==cuaudit diff== {} still present:\n{}", still_count, still);
  out += fmt::format("==cuaudit diff== {} fixed:\n", fixed.size());
  for (const auto& f : fixed) out += fmt::format("==cuaudit diff==   {}\n", visible(f));
  return out;
}

std::string render_merged_text(const Report& merged) {
  std::string out = fmt::format("==cuaudit merge== {} report(s), {} process(es)\n", merged.merged_from.size(),
                                merged.processes.size());
  for (const Finding& f : merged.findings) {
    if (f.suppressed) continue;
    std::string ranks;
    for (int r : f.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    std::string where = "(no stack)";
    if (!f.stack.empty()) {
      const Frame& top = f.stack.front();
      where = fmt::format("{} {}:{}", top.function.empty() ? "??" : top.function, top.file.empty() ? "??" : top.file,
                          top.line > 0 ? std::to_string(top.line) : "?");
    }
    out += fmt::format("==cuaudit merge== {} ({}) {}: {} byte(s) in {} occurrence(s) at {}; ranks {}\n",
                       finding_kind_key(f.kind), severity_name(f.severity), visible(f.api), f.bytes, f.count,
                       visible(where), ranks);
  }
  const Summary& s = merged.summary;
  out += fmt::format("==cuaudit merge== SUMMARY: {} byte(s) leaked in {} allocation(s); {}\n", s.leaked_bytes,
                     s.leaked_allocations, severity_counts(s, merged.findings, std::nullopt));
  return out;
}

}  // namespace cuaudit::report
