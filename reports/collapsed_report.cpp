#include "collapsed_report.h"

#include <fmt/format.h>

#include "text_helpers.h"

namespace cuaudit::report {
namespace {

// Collapsed stacks separate frames with ';' and the count with the last ' ': neither may appear
// inside a frame, and a C++ signature has both ("f(int, char)").
std::string frame_name(const Frame& f) {
  const std::string raw =
      valid_utf8(f.function.empty() ? (f.module.empty() ? std::string("??") : f.module) : f.function);
  // Flame-graph tools read lines of text: no control character of any kind survives.
  std::string name;
  for (size_t i = 0; i < raw.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(raw, i, cp);
    if (cp == ';') {
      name += ':';
    } else if (cp == ' ' || is_terminal_control(cp)) {
      name += '_';
    } else {
      name.append(raw, i, len);
    }
    i += len;
  }
  return name;
}

std::string collapsed_line(const std::string& root, const std::string& api, const std::vector<Frame>& stack,
                           uint64_t bytes) {
  std::string line = root;
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) line += ";" + frame_name(*it);
  line += ";" + api;
  return fmt::format("{} {}\n", line, bytes);
}

}  // namespace

std::string render_collapsed(const Report& report) {
  std::string out;
  for (const Finding& f : report.findings) {
    if (f.suppressed || f.kind != FindingKind::Leak || f.bytes == 0) continue;
    out += collapsed_line("leaked", f.api, f.stack, f.bytes);
  }
  for (const DevicePeak& peak : report.timeline.peaks) {
    for (const PeakSite& site : peak.sites) {
      out += collapsed_line(fmt::format("peak_of_device_{}", peak.device), site.api, site.stack, site.bytes);
    }
  }
  return out;
}

}  // namespace cuaudit::report
