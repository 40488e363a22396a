#include "path_map.h"

#include <stdexcept>

namespace cuaudit {

PathMapping parse_path_mapping(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("--path-map " + text + ": expected OLD=NEW, for example /build/src=/home/me/src");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::string map_path(const std::string& path, const std::vector<PathMapping>& mappings) {
  for (const PathMapping& m : mappings) {
    std::string from = m.from;
    while (from.size() > 1 && from.back() == '/') from.pop_back();
    if (path.compare(0, from.size(), from) != 0) continue;
    if (path.size() > from.size() && path[from.size()] != '/' && from != "/") continue;  // a whole directory only
    std::string rest = path.substr(from.size());
    if (m.to.empty()) {  // stripped: a relative path
      while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
      return rest;
    }
    std::string to = m.to;
    if (!rest.empty() && rest.front() != '/' && to.back() != '/') to += '/';
    if (!rest.empty() && rest.front() == '/' && to.back() == '/') to.pop_back();
    return to + rest;
  }
  return path;
}

void map_report_paths(report::Report& report, const std::vector<PathMapping>& mappings) {
  if (mappings.empty()) return;
  auto map_stack = [&](std::vector<report::Frame>& stack) {
    for (report::Frame& f : stack) {
      if (!f.file.empty()) f.file = map_path(f.file, mappings);
    }
  };
  for (report::Finding& f : report.findings) {
    map_stack(f.stack);
    for (report::RelatedStack& r : f.related) map_stack(r.stack);
  }
  for (report::DevicePeak& peak : report.timeline.peaks) {
    for (report::PeakSite& site : peak.sites) map_stack(site.stack);
  }
  for (report::AllocationSpan& span : report.allocation_spans) span.site = map_path(span.site, mappings);
}

}  // namespace cuaudit
