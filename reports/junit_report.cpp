#include "junit_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "text_helpers.h"

namespace cuaudit::report {
namespace {

std::string finding_text(const Finding& f) {
  std::string text = f.headline + "\n";
  if (f.device) text += fmt::format("    on device {}\n", *f.device);
  for (const Frame& frame : f.stack) {
    text += fmt::format("    {} {}:{}\n", frame.function.empty() ? "??" : frame.function,
                        frame.file.empty() ? frame.module : frame.file, frame.line);
  }
  for (const auto& note : f.notes) text += "    " + note + "\n";
  return text;
}

}  // namespace

std::string xml_escape(const std::string& raw) {
  const std::string text = valid_utf8(raw);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(text, i, cp);  // valid: valid_utf8 replaced the rest
    switch (cp) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0's Char allows no other control character, not even escaped, nor U+FFFE/U+FFFF.
        if ((cp < 0x20 && cp != '\n' && cp != '\t' && cp != '\r') || cp == 0xfffe || cp == 0xffff) {
          out += "\xEF\xBF\xBD";
        } else {
          out.append(text, i, len);
        }
    }
    i += len;
  }
  return out;
}

namespace {

// A process's name that stays the same from one run to the next (never its pid): the program's
// name, the rank under `cuaudit merge`, and a count among processes of the same program
// (launcher's process first, then by start time).
std::vector<std::string> stable_process_names(const Report& report) {
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  for (const Process& p : report.processes) {
    std::string name = p.command.empty() ? std::string("process") : basename_of(p.command.front());
    // An interpreter's script names the job better: "python train.py" is train.py.
    if ((name.rfind("python", 0) == 0 || name == "bash" || name == "sh") && p.command.size() > 1 &&
        p.command[1].rfind('-', 0) != 0)
      name = basename_of(p.command[1]);
    if (p.rank) name += fmt::format(".rank{}", *p.rank);
    const int n = ++seen[name];
    names.push_back(n == 1 ? name : fmt::format("{}#{}", name, n));
  }
  return names;
}

// "leak cudaMalloc at process_batch (demo_leaks.cu)": what the finding is about and where, the same
// in every run that has it. No line number: an edit above the leak must not make CI read one known
// failure as one fixed and one new (cuaudit diff and --baseline match findings the same way).
std::string finding_case_name(const Finding& f) {
  std::string name = std::string(finding_kind_key(f.kind));
  if (!f.api.empty()) name += " " + f.api;
  if (f.parameter) name += fmt::format(" {} parameter {}", f.parameter->kernel, f.parameter->index);
  for (const Frame& frame : f.stack) {
    if (frame.function.empty() && frame.file.empty()) continue;
    name += " at " + (frame.function.empty() ? std::string("??") : frame.function);
    if (!frame.file.empty()) name += fmt::format(" ({})", basename_of(frame.file));
    break;
  }
  return name;
}

}  // namespace

// One suite per process. Each finding that gates (error or warning) is a failing test case of its
// own, named by what and where it is, so CI's "new failures" and "fixed" follow it from run to
// run; each finding kind with no such finding is a passing test case, with the info findings of
// that kind as its output.
std::string render_junit(const Report& report) {
  std::string suites;
  size_t total_tests = 0, total_failures = 0;
  double total_seconds = 0;
  const std::vector<std::string> process_names = stable_process_names(report);
  for (size_t i = 0; i < report.processes.size(); ++i) {
    const Process& p = report.processes[i];
    // Jenkins reads a classname's dots as packages: "cuaudit.train.py" would be class "py".
    std::string process_name = process_names[i];
    std::replace(process_name.begin(), process_name.end(), '.', '_');
    const std::string classname = xml_escape("cuaudit." + process_name);
    std::string cases;
    size_t tests = 0, failures = 0, skipped = 0;
    std::map<std::string, int> case_names;
    for (const FindingKindInfo& kind : kFindingKinds) {
      std::string info;
      bool failed = false;
      for (const Finding& f : report.findings) {
        if (f.pid != p.pid || f.kind != kind.kind || f.suppressed) continue;
        if (f.severity == Severity::Info) {
          info += finding_text(f);
          continue;
        }
        failed = true;
        std::string name = finding_case_name(f);
        if (const int n = ++case_names[name]; n > 1) name += fmt::format(" #{}", n);
        cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", classname, xml_escape(name));
        cases += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", kind.key,
                             xml_escape(f.headline), xml_escape(finding_text(f)));
        cases += "    </testcase>\n";
        ++tests;
        ++failures;
      }
      if (failed) continue;
      cases += fmt::format("    <testcase classname=\"{}\" name=\"no {}\">\n", classname, kind.key);
      // A check that could not have found anything in this run did not pass: it was skipped.
      const auto unchecked = std::find_if(report.unchecked.begin(), report.unchecked.end(),
                                          [&](const UncheckedKind& u) { return u.kind == kind.kind; });
      if (unchecked != report.unchecked.end()) {
        cases += fmt::format("      <skipped message=\"not checked: {}\"/>\n", xml_escape(unchecked->reason));
        ++skipped;
      }
      if (!info.empty()) cases += fmt::format("      <system-out>{}</system-out>\n", xml_escape(info));
      cases += "    </testcase>\n";
      ++tests;
    }
    total_tests += tests;
    total_failures += failures;
    // The process's run time, as CI dashboards show a suite's (none when cuaudit saw no time of it).
    const std::string time = p.seconds ? fmt::format(" time=\"{:.3f}\"", *p.seconds) : std::string();
    total_seconds += p.seconds.value_or(0);
    suites += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\"{}>\n{}  </testsuite>\n",
        xml_escape("cuaudit: " + process_names[i]), tests, failures, skipped, time, cases);
  }
  // No `skipped` on <testsuites>: Jenkins' junit-10.xsd (and the Surefire schema it follows) allows
  // it only on each <testsuite>, and a file that fails the schema fails the whole import.
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"cuaudit\" tests=\"{}\" "
      "failures=\"{}\" errors=\"0\" time=\"{:.3f}\">\n{}</testsuites>\n",
      total_tests, total_failures, total_seconds, suites);
}

}  // namespace cuaudit::report
