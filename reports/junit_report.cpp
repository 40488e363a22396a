#include "junit_report.h"

#include <fmt/format.h>

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
  for (const unsigned char c : text) {
    switch (c) {
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
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += "\xEF\xBF\xBD";  // U+FFFD: XML 1.0 allows no other control character, not even escaped
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string render_junit(const Report& report) {
  std::string suites;
  size_t total_tests = 0, total_failures = 0;
  for (const Process& p : report.processes) {
    std::string cases;
    size_t failures = 0;
    for (const FindingKindInfo& kind : kFindingKinds) {
      std::string failing, info;
      size_t count = 0;
      for (const Finding& f : report.findings) {
        if (f.pid != p.pid || f.kind != kind.kind || f.suppressed) continue;
        if (f.severity == Severity::Info) {
          info += finding_text(f);
          continue;
        }
        ++count;
        failing += finding_text(f);
      }
      cases += fmt::format("    <testcase classname=\"cuaudit.pid{}\" name=\"{}\">\n", p.pid, kind.key);
      if (count) {
        ++failures;
        cases += fmt::format("      <failure type=\"{}\" message=\"{} finding(s)\">{}</failure>\n", kind.key, count,
                             xml_escape(failing));
      }
      if (!info.empty()) cases += fmt::format("      <system-out>{}</system-out>\n", xml_escape(info));
      cases += "    </testcase>\n";
    }
    const size_t tests = std::size(kFindingKinds);
    total_tests += tests;
    total_failures += failures;
    suites += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n{}  </testsuite>\n",
        xml_escape(fmt::format("cuaudit: process {} {}", p.pid, join_words(p.command))), tests, failures, cases);
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"cuaudit\" tests=\"{}\" "
      "failures=\"{}\" errors=\"0\">\n{}</testsuites>\n",
      total_tests, total_failures, suites);
}

}  // namespace cuaudit::report
