#include "site_labels.h"

#include <algorithm>

#include <fmt/format.h>

#include "function_names.h"
#include "python_frames.h"
#include "text_helpers.h"

namespace cuaudit {

std::string site_label(const std::vector<report::Frame>& stack, const Suppressions& rules) {
  std::vector<report::Frame> python, native;
  for (const report::Frame& f : stack) (f.module == "python" ? python : native).push_back(f);
  if (stack.empty()) return "no stack recorded";  // a thread without Python frames (PyTorch's autograd)
  std::string native_name;
  if (!native.empty()) {
    std::optional<std::string> allocator = rules.allocator_of(native);
    native_name = allocator ? *allocator : report::stack_site_name(native);
  }
  if (python.empty()) return native_name;
  const report::Frame& f = python[user_python_frame(python)];
  const std::string line = fmt::format("{}:{}", report::basename_of(f.file), f.line);
  // A framework's block has no native frames: its line is the site. CUDA memory a library took
  // for that line (cuBLAS's workspace at the first matmul) is the library's, made from the line.
  return native_name.empty() ? line : fmt::format("{} from {}", native_name, line);
}

namespace {

uint64_t highest(const report::SeriesSite& s) {
  return s.bytes.empty() ? 0 : *std::max_element(s.bytes.begin(), s.bytes.end());
}

// Sites of one API and one name become the first of them, with every later one's figures added.
template <typename Site, typename Add>
void merge_by_name(std::vector<Site>& sites, Add add) {
  std::vector<Site> merged;
  for (Site& s : sites) {
    auto same =
        std::find_if(merged.begin(), merged.end(), [&](const Site& m) { return m.api == s.api && m.site == s.site; });
    if (same == merged.end()) {
      merged.push_back(std::move(s));
    } else {
      add(*same, s);
    }
  }
  sites = std::move(merged);
}

}  // namespace

void label_timeline_sites(report::Timeline& timeline, const Suppressions& rules) {
  for (report::DevicePeak& peak : timeline.peaks) {
    for (report::PeakSite& s : peak.sites)
      if (s.site.empty()) s.site = site_label(s.stack, rules);  // a pool's reserve is named already
    merge_by_name(peak.sites, [](report::PeakSite& into, const report::PeakSite& s) {
      into.bytes += s.bytes;
      into.count += s.count;
    });
    std::stable_sort(peak.sites.begin(), peak.sites.end(),
                     [](const report::PeakSite& a, const report::PeakSite& b) { return a.bytes > b.bytes; });
  }
  for (report::SiteSeries& series : timeline.site_series) {
    for (report::SeriesSite& s : series.sites)
      if (s.site.empty()) s.site = site_label(s.stack, rules);
    merge_by_name(series.sites, [](report::SeriesSite& into, const report::SeriesSite& s) {
      for (size_t b = 0; b < into.bytes.size() && b < s.bytes.size(); ++b) into.bytes[b] += s.bytes[b];
    });
    std::stable_sort(series.sites.begin(), series.sites.end(),
                     [](const report::SeriesSite& a, const report::SeriesSite& b) { return highest(a) > highest(b); });
  }
}

void label_growth_sites(std::vector<report::Finding>& findings, const Suppressions& rules) {
  for (report::Finding& f : findings)
    if (f.growth) f.growth->site = site_label(f.stack, rules);
}

}  // namespace cuaudit
