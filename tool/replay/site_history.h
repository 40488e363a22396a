// Live memory by allocation site over a run: what each site holds now (the timeline's peaks and
// the live snapshot read it), and a short history of it, so that a site that keeps climbing while
// the rest stays level is seen (native growth) and drawn (the HTML report's stacked chart).
//
// The history is kept in time buckets, at most kMaxBuckets of them: a bucket's width starts at
// 100 ms and doubles (neighbouring buckets merged) whenever the run outgrows them, so a three-day
// service costs as much as a one-minute test. A site's history is the list of buckets at whose end
// its live bytes had changed: a site that stays level costs one point.
//
// Sites of host memory (cudaMallocHost's) are kept at device trace::kHostDevice: the profile (--pprof) shows
// them, the timeline and the growth judged are the devices'.
//
// Every byte is counted once, where the program asked for it (ownership.h): a pool's blocks at
// their own site (PyTorch's tensors at the user's Python line, not at the caching allocator's
// cudaMalloc), and what a pool reserved but has not handed out as one site of the pool's own, its
// cache ("reserve" sites: the segments' bytes less the blocks').
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "flat_lookup.h"
#include "replay.h"
#include "trace_model.h"

namespace cuaudit {

class SiteHistory : public ReplayObserver {
 public:
  static constexpr size_t kMaxBuckets = 128;
  static constexpr uint64_t kFirstBucketNs = 100'000'000;

  static constexpr uint32_t kNotAPool = UINT32_MAX;
  struct Key {
    int32_t device;
    uint64_t stack_id;
    uint64_t python_stack_id;   // a Python program's line: one native path serves many
    Api api;                    // for a pool's reserve, the API of its first segment
    uint32_t pool = kNotAPool;  // a pool's reserve: what it holds and has not handed out
    bool is_reserve() const { return pool != kNotAPool; }
    bool operator==(const Key& o) const {
      return device == o.device && stack_id == o.stack_id && python_stack_id == o.python_stack_id && api == o.api &&
             pool == o.pool;
    }
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
    // Over the run (--pprof's alloc_space): what the site ever allocated; a pool's cache counts
    // the segments it reserved.
    uint64_t allocated_bytes = 0, allocated_256ths = 0;
    uint64_t count() const { return (count_256ths + 128) / 256; }
    uint64_t allocated_count() const { return (allocated_256ths + 128) / 256; }
  };

  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()((k.stack_id * 0x9e3779b97f4a7c15ull ^ k.python_stack_id) * 0xff51afd7ed558ccdull ^
                                   static_cast<uint64_t>(k.api) << 8 ^ static_cast<uint64_t>(k.pool) << 32 ^
                                   static_cast<uint64_t>(static_cast<uint32_t>(k.device)));
    }
  };
  using Sites = std::unordered_map<Key, Site, KeyHash>;

  explicit SiteHistory(const ProcessTrace& trace);
  void on_event(const Event& e) override;
  void on_live(const MemoryEvent& a) override;
  void on_gone(const MemoryEvent& a) override;
  void on_reserve(const MemoryEvent& a, uint32_t pool) override;
  bool prefetches() const override { return true; }
  void prefetch(const Event& e, bool near) override;
  // After the last event: closes the bucket it fell in.
  void finish();

  // Every site that ever held memory (what the timeline compares: those of a device), with what it
  // holds now.
  const Sites& sites() const { return sites_; }
  // Buckets so far, their width, and a site's live bytes at the end of each (dense).
  size_t buckets() const { return current_ + 1; }
  uint64_t bucket_ns() const { return width_ns_; }
  uint64_t start_ns() const { return start_ns_; }
  std::vector<uint64_t> series(const Site& site) const;

 private:
  void advance_to(uint64_t time_ns);
  void close_bucket();
  // The site of an allocation of the program (not a pool's reserve) on `device`.
  static Key site_key(const MemoryEvent& a, int32_t device) {
    return Key{std::max(device, trace::kHostDevice), a.stack_id, a.python_stack_id, a.api};
  }
  Site* site_of(const MemoryEvent& a);
  Site* touch(const Key& key);
  void add(Site& site, const MemoryEvent& a);
  void remove(Site& site, const MemoryEvent& a);
  // A pool's reserve site: its segments' bytes less its blocks' (exact: blocks without a sampled
  // stack are in no site of their own, but they are not the pool's free memory either).
  struct Reserve {
    int32_t device = -1;
    Api api = Api::Count;  // of its first segment (cudaMalloc for PyTorch's): what charts say it used
    uint64_t reserved = 0, handed_out = 0, segments = 0;
  };
  Site* reserve_site(uint32_t pool);  // none while the pool's device is not known
  void update_reserve_site(uint32_t pool);
  uint64_t count_256ths(uint64_t bytes) const;  // what one allocation of `bytes` adds to its site's count

  StackSampling sampling_;
  uint64_t start_ns_;
  uint64_t width_ns_ = kFirstBucketNs;
  size_t current_ = 0;  // the bucket events now fall in
  Sites sites_;
  FlatLookup<Sites> site_lookup_;  // every allocation and release finds its site: the fast way in
  std::vector<Site*> dirty_;       // sites changed in the current bucket (pointers into sites_ stay valid)
  std::unordered_map<uint32_t, Reserve> reserves_;       // by pool
  std::unordered_map<uint64_t, uint32_t> reserve_seqs_;  // live CUDA allocations that are a pool's reserve -> pool
};

}  // namespace cuaudit
