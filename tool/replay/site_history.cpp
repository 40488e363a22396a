#include "site_history.h"

#include <algorithm>
#include <cmath>

namespace cuaudit {

SiteHistory::SiteHistory(const ProcessTrace& trace)
    : sampling_(trace.stack_sampling), start_ns_(trace.start_monotonic_ns) {
  sites_.reserve(trace.stacks.size());  // about a site a stack: no rehash while the replay runs
}

SiteHistory::Site* SiteHistory::touch(const Key& key) {
  Site& site = site_lookup_(sites_, key);
  if (!site.dirty) {
    site.dirty = true;
    dirty_.push_back(&site);
  }
  return &site;
}

SiteHistory::Site* SiteHistory::site_of(const MemoryEvent& a) {
  const MemoryFamily family = api_info(a.api).family;
  if (!(owns_memory(family) || is_pool_block(family)) || sampling_.unsampled(a.stack_id)) return nullptr;
  int32_t device = a.device;
  if (device < 0 && is_pool_block(family)) {  // a block that does not say its device is on its pool's
    const auto reserve = reserves_.find(a.pool);
    if (reserve != reserves_.end()) device = reserve->second.device;
  }
  if (device < 0 && is_pool_block(family)) return nullptr;
  return touch(site_key(a, device));
}

uint64_t SiteHistory::count_256ths(uint64_t bytes) const {
  return static_cast<uint64_t>(std::llround(sampling_.weight(bytes) * 256.0));
}

void SiteHistory::add(Site& site, const MemoryEvent& a) {
  const uint64_t bytes = sampling_.estimated_bytes(a.bytes), count = count_256ths(a.bytes);
  site.bytes += bytes;
  site.count_256ths += count;
  site.allocated_bytes += bytes;
  site.allocated_256ths += count;
}

void SiteHistory::remove(Site& site, const MemoryEvent& a) {
  site.bytes -= std::min(site.bytes, sampling_.estimated_bytes(a.bytes));
  site.count_256ths -= std::min(site.count_256ths, count_256ths(a.bytes));
}

SiteHistory::Site* SiteHistory::reserve_site(uint32_t pool) {
  const Reserve& r = reserves_[pool];
  if (r.device < 0) return nullptr;  // blocks of a pool whose reserve is not known (yet): no CUDA memory counted twice
  return touch(Key{r.device, trace::kNoStack, 0, r.api, pool});
}

void SiteHistory::update_reserve_site(uint32_t pool) {
  const Reserve& r = reserves_[pool];
  Site* site = reserve_site(pool);
  if (!site) return;
  site->bytes = r.reserved > r.handed_out ? r.reserved - r.handed_out : 0;
  site->count_256ths = r.segments * 256;
}

void SiteHistory::on_live(const MemoryEvent& a) {
  if (is_pool_block(api_info(a.api).family)) {
    reserves_[a.pool].handed_out += a.bytes;
    update_reserve_site(a.pool);
  }
  if (Site* site = site_of(a)) add(*site, a);
}

void SiteHistory::on_gone(const MemoryEvent& a) {
  if (is_pool_block(api_info(a.api).family)) {
    Reserve& r = reserves_[a.pool];
    r.handed_out -= std::min(r.handed_out, a.bytes);
    update_reserve_site(a.pool);
  } else if (const auto reserve = reserve_seqs_.find(a.seq); reserve != reserve_seqs_.end()) {
    // A segment the pool gave back: counted in the pool's reserve, at no site of its own.
    const uint32_t pool = reserve->second;
    reserve_seqs_.erase(reserve);
    Reserve& r = reserves_[pool];
    r.reserved -= std::min(r.reserved, a.bytes);
    r.segments -= std::min<uint64_t>(r.segments, 1);
    update_reserve_site(pool);
    return;
  }
  if (Site* site = site_of(a)) remove(*site, a);
}

void SiteHistory::on_reserve(const MemoryEvent& a, uint32_t pool) {
  if (Site* site = site_of(a)) {  // counted at its cudaMalloc until now, allocated there too
    remove(*site, a);
    site->allocated_bytes -= std::min(site->allocated_bytes, sampling_.estimated_bytes(a.bytes));
    site->allocated_256ths -= std::min(site->allocated_256ths, count_256ths(a.bytes));
  }
  reserve_seqs_.emplace(a.seq, pool);
  Reserve& r = reserves_[pool];
  r.device = a.device;
  if (r.api == Api::Count) r.api = a.api;
  r.reserved += a.bytes;
  ++r.segments;
  update_reserve_site(pool);
  if (Site* site = reserve_site(pool)) {
    site->allocated_bytes += a.bytes;
    site->allocated_256ths += 256;
  }
}

void SiteHistory::on_event(const Event& e) { advance_to(e.time_ns); }

// An allocation's site (its release finds the same site, loaded by then). A pool's block is left
// alone: its device may be its pool's, found only when it comes.
void SiteHistory::prefetch(const Event& e, bool near) {
  if (e.kind != EventKind::Alloc || !owns_memory(api_info(e.memory().api).family)) return;
  site_lookup_.prefetch(sites_, site_key(e.memory(), e.memory().device), near);
}

void SiteHistory::finish() { close_bucket(); }

void SiteHistory::close_bucket() {
  for (Site* site : dirty_) {
    site->dirty = false;
    // A site that allocated and released within the bucket ends it as it began: no point (the
    // churning sites of a long run would otherwise fill their history with the same value).
    const uint64_t before = site->points.empty() ? 0 : site->points.back().bytes;
    if (site->bytes == before) continue;
    if (!site->points.empty() && site->points.back().bucket == current_) {
      site->points.back().bytes = site->bytes;
    } else {
      site->points.push_back({static_cast<uint32_t>(current_), site->bytes});
    }
  }
  dirty_.clear();
}

void SiteHistory::advance_to(uint64_t time_ns) {
  if (start_ns_ == 0) start_ns_ = time_ns;  // a trace without its start time counts from its first event
  if (time_ns < start_ns_) return;
  size_t bucket = (time_ns - start_ns_) / width_ns_;
  if (bucket <= current_) return;
  close_bucket();
  // Twice as wide when the run outgrows the buckets: a point moves to the merged bucket, and of
  // two that meet there the later one (the value at the merged bucket's end) stays.
  while (bucket >= kMaxBuckets) {
    width_ns_ *= 2;
    bucket = (time_ns - start_ns_) / width_ns_;
    for (auto& [key, site] : sites_) {
      std::vector<Point>& points = site.points;
      size_t kept = 0;
      for (size_t i = 0; i < points.size(); ++i) {
        const Point merged{points[i].bucket / 2, points[i].bytes};
        if (kept && points[kept - 1].bucket == merged.bucket) {
          points[kept - 1] = merged;
        } else {
          points[kept++] = merged;
        }
      }
      points.resize(kept);
    }
  }
  current_ = bucket;
}

std::vector<uint64_t> SiteHistory::series(const Site& site) const {
  std::vector<uint64_t> out(buckets(), 0);
  uint64_t value = 0;
  size_t next = 0;
  for (size_t b = 0; b < out.size(); ++b) {
    while (next < site.points.size() && site.points[next].bucket <= b) value = site.points[next++].bytes;
    out[b] = value;
  }
  return out;
}

}  // namespace cuaudit
