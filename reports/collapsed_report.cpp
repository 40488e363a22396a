#include "collapsed_report.h"

#include <fmt/format.h>

namespace cuaudit::report {
namespace {

// Collapsed stacks separate frames with ';' and the count with the last ' ': neither may appear
// inside a frame, and a C++ signature has both ("f(int, char)").
std::string frame_name(const Frame& f) {
  std::string name = f.function.empty() ? (f.module.empty() ? std::string("??") : f.module) : f.function;
  for (char& c : name) {
    if (c == ';') c = ':';
    if (c == ' ' || c == '\n' || c == '\t') c = '_';
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
