// Live memory by allocation site over a run: what each site holds now (the timeline's peaks and
// the live snapshot read it), and a short history of it, so that a site that keeps climbing while
// the rest stays level is seen (native growth) and drawn (the HTML report's stacked chart).
//
// The history is kept in time buckets, at most kMaxBuckets of them: a bucket's width starts at
// 100 ms and doubles (neighbouring buckets merged) whenever the run outgrows them, so a three-day
// service costs as much as a one-minute test. A site's history is the list of buckets at whose end
// its live bytes had changed: a site that stays level costs one point.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "replay.h"
#include "trace_model.h"

namespace cuaudit {

class SiteHistory : public ReplayObserver {
 public:
  static constexpr size_t kMaxBuckets = 128;
  static constexpr uint64_t kFirstBucketNs = 100'000'000;

  struct Key {
    int32_t device;
    uint64_t stack_id;
    Api api;
    bool operator==(const Key& o) const { return device == o.device && stack_id == o.stack_id && api == o.api; }
  };
  struct Point {
    uint32_t bucket;
    uint64_t bytes;
  };
  // Live now. With sampled stacks (watch mode) both are estimates: each sampled allocation counts
  // as many as it stands for (stack_sampling.h), and allocations without a sampled stack count in
  // no site.
  struct Site {
    uint64_t bytes = 0;
    uint64_t count_256ths = 0;  // allocations, in 256ths (estimates are fractional)
    bool dirty = false;         // changed in the current bucket
    std::vector<Point> points;  // live bytes at the end of each bucket it changed in
    uint64_t count() const { return (count_256ths + 128) / 256; }
  };

  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.stack_id * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(k.api) << 8 ^
                                   static_cast<uint64_t>(static_cast<uint32_t>(k.device)));
    }
  };
  using Sites = std::unordered_map<Key, Site, KeyHash>;

  explicit SiteHistory(const ProcessTrace& trace);
  void on_event(const Event& e) override;
  void on_live(const MemoryEvent& a) override;
  void on_gone(const MemoryEvent& a) override;
  // After the last event: closes the bucket it fell in.
  void finish();

  // Every site that ever held device memory (what the timeline compares), with what it holds now.
  const Sites& sites() const { return sites_; }
  // Buckets so far, their width, and a site's live bytes at the end of each (dense).
  size_t buckets() const { return current_ + 1; }
  uint64_t bucket_ns() const { return width_ns_; }
  uint64_t start_ns() const { return start_ns_; }
  std::vector<uint64_t> series(const Site& site) const;

 private:
  void advance_to(uint64_t time_ns);
  void close_bucket();
  Site* site_of(const MemoryEvent& a);
  uint64_t count_256ths(uint64_t bytes) const;  // what one allocation of `bytes` adds to its site's count

  StackSampling sampling_;
  uint64_t start_ns_;
  uint64_t width_ns_ = kFirstBucketNs;
  size_t current_ = 0;  // the bucket events now fall in
  Sites sites_;
  std::vector<Site*> dirty_;  // sites changed in the current bucket (pointers into sites_ stay valid)
};

}  // namespace cuaudit
