#include "json_reading.h"

// The readers of a finding's figures (json_reading.h): out of memory, churn, fragmentation and
// its picture, growth, a launch finding's parameter.
namespace cuaudit::report::json_reading {
namespace {

PoolPicture picture_from(const json& j, const std::string& at) {
  PoolPicture p;
  const json& sites = get_array(j, "sites", at);
  for (size_t i = 0; i < sites.size(); ++i) {
    const std::string site_at = fmt::format("{}.sites[{}]", at, i);
    PictureSite s;
    s.api = get_text(sites[i], "api", site_at);
    s.bytes = get_number<uint64_t>(sites[i], "bytes", site_at);
    s.count = get_number<uint64_t>(sites[i], "count", site_at);
    if (const json& f = member(sites[i], "at", site_at); !f.is_null()) s.at = frame_from(f, site_at + ".at");
    p.sites.push_back(std::move(s));
  }
  const json& segments = get_array(j, "segments", at);
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string segment_at = fmt::format("{}.segments[{}]", at, i);
    SegmentPicture s;
    s.bytes = get_number<uint64_t>(segments[i], "bytes", segment_at);
    const json& blocks = get_array(segments[i], "blocks", segment_at);
    for (size_t k = 0; k < blocks.size(); ++k) {
      const json& b = blocks[k];
      if (!b.is_array() || b.size() != 3 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
          !b[2].is_number_integer())
        bad(fmt::format("{}.blocks[{}]", segment_at, k), "expected [offset, bytes, site]");
      const int site = b[2].get<int>();
      if (site < -1 || site >= static_cast<int>(p.sites.size()))
        bad(fmt::format("{}.blocks[{}]", segment_at, k), "site out of range");
      s.blocks.push_back({b[0].get<uint64_t>(), b[1].get<uint64_t>(), site});
    }
    p.segments.push_back(std::move(s));
  }
  p.truncated = get_bool(j, "truncated", at, false);
  return p;
}

}  // namespace

std::optional<KernelParameter> parameter_from(const json& parameter, const std::string& at) {
  if (parameter.is_null()) return std::nullopt;
  KernelParameter p;
  p.kernel = get_text(parameter, "kernel", at);
  p.index = get_number<int>(parameter, "index", at);
  p.type = get_text(parameter, "type", at);
  p.alignment = get_number<uint32_t>(parameter, "alignment", at);
  p.offset = get_optional_number<uint64_t>(parameter, "offset", at);
  // Reports written before kernel-access checks have neither.
  p.member_offset = get_optional_number<uint32_t>(parameter, "member_offset", at).value_or(0);
  const auto from = parameter.find("alignment_from");
  if (from != parameter.end() && from->is_string()) p.alignment_from = from->get<std::string>();
  return p;
}

std::optional<OutOfMemoryState> out_of_memory_from(const json& oom, const std::string& at) {
  if (oom.is_null()) return std::nullopt;
  OutOfMemoryState o;
  o.requested = get_number<uint64_t>(oom, "requested", at);
  o.device_total = get_optional_number<uint64_t>(oom, "device_total", at);
  o.device_free = get_optional_number<uint64_t>(oom, "device_free", at);
  o.program_held = get_number<uint64_t>(oom, "program_held", at);
  o.families = families_from(oom, at);
  o.pool_reserved = get_optional_number<uint64_t>(oom, "pool_reserved", at);
  o.pool_used = get_optional_number<uint64_t>(oom, "pool_used", at);
  o.other_processes = get_optional_number<uint64_t>(oom, "other_processes", at);
  o.allocator_limit = get_optional_number<uint64_t>(oom, "allocator_limit", at);
  o.allocator_in_use = get_optional_number<uint64_t>(oom, "allocator_in_use", at);
  o.allocator_largest_free = get_optional_number<uint64_t>(oom, "allocator_largest_free", at);
  o.verdict = get_text(oom, "verdict", at);
  return o;
}

std::optional<ChurnStats> churn_from(const json& churn, const std::string& at) {
  if (churn.is_null()) return std::nullopt;
  ChurnStats c;
  c.pairs = get_number<uint64_t>(churn, "pairs", at);
  c.median_lifetime_ns = get_number<uint64_t>(churn, "median_lifetime_ns", at);
  c.call_ns = get_number<uint64_t>(churn, "call_ns", at);
  c.run_share = get_number<double>(churn, "run_share", at);
  return c;
}

std::optional<FragmentationStats> fragmentation_from(const json& j, const std::string& at) {
  if (j.is_null()) return std::nullopt;
  FragmentationStats g;
  g.pool = get_text(j, "pool", at);
  g.at = get_number<double>(j, "at", at);
  g.requested = get_number<uint64_t>(j, "requested", at);
  g.reserved = get_number<uint64_t>(j, "reserved", at);
  g.used = get_number<uint64_t>(j, "used", at);
  g.free = get_number<uint64_t>(j, "free", at);
  g.largest_free = get_number<uint64_t>(j, "largest_free", at);
  g.ratio = get_number<double>(j, "ratio", at);
  g.grew_by = get_number<uint64_t>(j, "grew_by", at);
  g.misses = get_number<uint64_t>(j, "misses", at);
  g.request_sizes = get_numbers<uint64_t>(j, "request_sizes", at);
  // Reports written before the stretch rule and the segment view have neither.
  if (j.contains("trigger")) {
    g.trigger = get_text(j, "trigger", at);
    if (g.trigger != "miss" && g.trigger != "stretch") bad(at + ".trigger", "expected \"miss\" or \"stretch\"");
    g.stretch_from = get_number<double>(j, "stretch_from", at);
    g.stretch_seconds = get_number<double>(j, "stretch_seconds", at);
    g.picture = picture_from(member(j, "picture", at), at + ".picture");
  }
  return g;
}

std::optional<GrowthStats> growth_from(const json& growth, const std::string& at) {
  if (growth.is_null()) return std::nullopt;
  GrowthStats g;
  g.bytes_per_hour = get_number<double>(growth, "bytes_per_hour", at);
  g.start = get_number<double>(growth, "start", at);
  g.end = get_number<double>(growth, "end", at);
  g.start_bytes = get_number<uint64_t>(growth, "start_bytes", at);
  g.end_bytes = get_number<uint64_t>(growth, "end_bytes", at);
  if (growth.contains("site")) g.site = get_text(growth, "site", at);  // reports before 2026-12-06 have none
  return g;
}

}  // namespace cuaudit::report::json_reading
