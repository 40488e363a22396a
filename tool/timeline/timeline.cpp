#include "timeline.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "pool_names.h"
#include "replay.h"
#include "site_names.h"

namespace cuaudit {

namespace {

bool bigger(uint64_t a_bytes, const SiteHistory::Key& a, uint64_t b_bytes, const SiteHistory::Key& b) {
  return std::tie(a_bytes, b.stack_id, b.python_stack_id, b.pool) >
         std::tie(b_bytes, a.stack_id, a.python_stack_id, a.pool);
}

}  // namespace

TimelineObserver::TimelineObserver(const ProcessTrace& trace, const SiteHistory& sites, report::Timeline& timeline)
    : trace_(trace), sites_(sites), timeline_(timeline) {
  for (const auto& [number, pool] : trace.pools)
    has_framework_pool_ |= source_info(pool.kind).kind == SourceKind::FrameworkPool;
}

void TimelineObserver::on_sample(const MemorySample& s, const DeviceHoldings& held, const LiveVisitor&) {
  report::TimelineSample out;
  out.t = trace_.seconds_since_start(s.time_ns);
  out.pid = trace_.pid;
  out.device = s.device;
  out.used = s.total_bytes > s.free_bytes ? s.total_bytes - s.free_bytes : 0;
  out.free = s.free_bytes;
  out.tracked = held.total;
  // A framework's pool (PyTorch's, CuPy's): what its segments hold for the program, beside them.
  if (has_framework_pool_) out.blocks = held.framework_blocks;
  for (size_t f = 0; f < kMemoryFamilies; ++f) {
    if (held.by_family[f]) out.families.emplace_back(family_key(static_cast<MemoryFamily>(f)), held.by_family[f]);
  }
  // The sampler writes the device's pool right after its sample (once the program uses pools).
  const auto& states = trace_.device_states;
  for (; state_ < states.size() && states[state_].seq < s.seq; ++state_) {
  }
  for (size_t d = state_; d < states.size() && states[d].seq <= s.seq + 2; ++d) {
    if (states[d].device == s.device && states[d].pool_reserved && !states[d].at_failed_allocation) {
      out.pool_reserved = states[d].pool_reserved;
      out.pool_used = states[d].pool_used;
      out.pool_reserved_high = states[d].pool_reserved_high;
      out.pool_used_high = states[d].pool_used_high;
      break;
    }
  }
  timeline_.samples.push_back(out);
  Peak& peak = peaks_[s.device];
  if (!peak.seen || out.used > peak.sample.used) {
    peak.seen = true;
    peak.sample = out;
    // The sites are copied at a new peak only when it is higher than the copied one by more than
    // 1/256: a program whose memory climbs sets a new peak at every sample, and copying every time
    // would cost a pass over its sites per sample. The sites shown are then those of a sample at
    // most 0.4% below the peak.
    if (!peak.sites_taken || out.used - peak.sites_used > peak.sites_used / 256) {
      peak.sites.clear();
      for (const auto& [key, site] : sites_.sites()) {
        if (key.device == s.device && site.count_256ths) peak.sites.push_back({key, site.bytes, site.count()});
      }
      peak.sites_used = out.used;
      peak.sites_taken = true;
    }
  }
}

void TimelineObserver::on_pool_sample(const MemorySample& s, uint32_t pool, const PoolUsage& usage, const PoolsView&) {
  // A pool that says nothing of the memory it hands blocks out of, nor its own figures, has no
  // reserve to chart: its blocks are in the samples' allocated bytes.
  const auto info = trace_.pools.find(pool);
  if (info != trace_.pools.end() && !source_info(info->second.kind).has_segments && !usage.reserved) return;
  report::PoolSeries& series = pools_[pool];
  series.t.push_back(trace_.seconds_since_start(s.time_ns));
  series.reserved.push_back(usage.reserved);
  series.used.push_back(usage.used);
  series.free.push_back(usage.free);
  series.largest_free.push_back(usage.largest_free);
  series.holes.push_back(usage.hole_bytes());
}

void TimelineObserver::finish(StackResolver& stacks, size_t top_sites) {
  for (auto& [pool, series] : pools_) {
    series.pid = trace_.pid;
    series.pool = pool_description(trace_.pools, pool);
    timeline_.pool_series.push_back(std::move(series));
  }
  pools_.clear();
  for (const auto& [device, peak] : peaks_) {
    report::DevicePeak p;
    p.pid = trace_.pid;
    p.device = device;
    p.t = peak.sample.t;
    p.used = peak.sample.used;
    p.tracked = peak.sample.tracked;
    p.families = peak.sample.families;
    // The biggest sites, whose stacks alone are resolved.
    std::vector<Held> biggest = peak.sites;
    std::sort(biggest.begin(), biggest.end(),
              [](const Held& a, const Held& b) { return bigger(a.bytes, a.key, b.bytes, b.key); });
    if (biggest.size() > top_sites) biggest.resize(top_sites);
    for (const Held& held : biggest) {
      report::PeakSite site;
      SiteName name = name_site(trace_, held.key, stacks);
      site.api = std::move(name.api);
      site.stack = std::move(name.stack);
      site.site = std::move(name.site);
      site.bytes = held.bytes;
      site.count = held.count;
      p.sites.push_back(std::move(site));
    }
    timeline_.peaks.push_back(std::move(p));
  }
}

void add_site_series(const ProcessTrace& trace, const SiteHistory& history, StackResolver& stacks,
                     report::Timeline& timeline, size_t top_sites) {
  if (history.buckets() < 2) return;
  const double bucket_seconds = static_cast<double>(history.bucket_ns()) / 1e9;
  const double offset = trace.seconds_since_start(history.start_ns());
  struct Ranked {
    const SiteHistory::Key* key;
    std::vector<uint64_t> values;
    uint64_t highest;
  };
  std::map<int32_t, std::vector<Ranked>> by_device;
  for (const auto& [key, site] : history.sites()) {
    if (key.device < 0) continue;  // host memory: the charts are the devices'
    std::vector<uint64_t> values = history.series(site);
    const uint64_t highest = *std::max_element(values.begin(), values.end());
    if (highest) by_device[key.device].push_back({&key, std::move(values), highest});
  }
  for (auto& [device, sites] : by_device) {
    std::sort(sites.begin(), sites.end(),
              [](const Ranked& a, const Ranked& b) { return bigger(a.highest, *a.key, b.highest, *b.key); });
    report::SiteSeries out;
    out.pid = trace.pid;
    out.device = device;
    for (size_t b = 0; b < history.buckets(); ++b)
      out.t.push_back(offset + bucket_seconds * static_cast<double>(b + 1));
    out.other.assign(history.buckets(), 0);
    out.sampled = trace.stack_sampling.on();
    for (size_t i = 0; i < sites.size(); ++i) {
      if (i < top_sites) {
        report::SeriesSite site;
        SiteName name = name_site(trace, *sites[i].key, stacks);
        site.api = std::move(name.api);
        site.stack = std::move(name.stack);
        site.site = std::move(name.site);
        site.bytes = sites[i].values;
        site.count = history.sites().at(*sites[i].key).count();
        out.sites.push_back(std::move(site));
      } else {
        for (size_t b = 0; b < out.other.size(); ++b) out.other[b] += sites[i].values[b];
        out.other_count += history.sites().at(*sites[i].key).count();
      }
    }
    timeline.site_series.push_back(std::move(out));
  }
}

void build_timeline(const ProcessTrace& trace, StackResolver& stacks, report::Timeline& timeline, size_t top_sites) {
  if (trace.samples.empty()) return;
  SiteHistory sites(trace);
  TimelineObserver timeline_observer(trace, sites, timeline);
  ObserverList observers;
  observers.add(&sites);  // first: the timeline reads what it holds
  observers.add(&timeline_observer);
  replay(trace, &observers);
  timeline_observer.finish(stacks, top_sites);
}

}  // namespace cuaudit
