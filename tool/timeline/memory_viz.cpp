#include "memory_viz.h"

#include <algorithm>

#include "api_table.h"
#include "profile_stacks.h"
#include "site_names.h"

namespace cuaudit {

using report::VizAction;

MemoryVizCollector::MemoryVizCollector(const ProcessTrace& trace, StackResolver& stacks, size_t max_entries)
    : trace_(trace), stacks_(stacks), max_entries_(max_entries) {
  out_.pid = trace.pid;
  out_.stacks.emplace_back();  // 0: no stack
}

uint32_t MemoryVizCollector::stack_of(const MemoryEvent& a) {
  const auto [it, inserted] =
      stack_ids_.try_emplace({a.stack_id, a.python_stack_id}, static_cast<uint32_t>(out_.stacks.size()));
  if (inserted) {
    const std::vector<report::Frame> stack = site_stack(trace_, a.stack_id, a.python_stack_id, stacks_);
    std::vector<report::Frame> shown;
    for (const report::Frame* f : report::profile_frames(stack)) shown.push_back(*f);
    out_.stacks.push_back(std::move(shown));
  }
  return it->second;
}

// What the replay's live set knows an allocation by: its key in its API's key space, a block's in
// its pool (sequence numbers are not unique: a framework's own history has none).
std::pair<uint64_t, uint64_t> MemoryVizCollector::live_key(const MemoryEvent& a) {
  const ApiInfo& info = api_info(a.api);
  const uint64_t pool = is_pool_block(info.family) ? a.pool : 0;
  return {static_cast<uint64_t>(info.space) << 32 | pool, a.key};
}

uint64_t MemoryVizCollector::add(VizAction action, const Live& live) {
  report::VizEntry e;
  e.device = live.device;
  e.action = action;
  e.address = live.event.key;
  e.size = live.event.bytes;
  e.time_us = static_cast<uint64_t>(std::max(0.0, trace_.seconds_since_start(now_ns_)) * 1e6);
  e.stack = live.stack;
  entries_.emplace_back(e, false);
  if (entries_.size() > max_entries_) {
    entries_.pop_front();
    ++first_entry_;
    ++out_.entries_left_out;
  }
  return first_entry_ + entries_.size() - 1;
}

void MemoryVizCollector::on_event(const Event& e) { now_ns_ = std::max(now_ns_, e.time_ns); }

void MemoryVizCollector::on_live(const MemoryEvent& a) {
  const MemoryFamily family = api_info(a.api).family;
  Live live{a, a.device, 0, Kind::Plain, 0};
  if (is_pool_block(family)) {
    const auto pool = pool_devices_.find(a.pool);
    if (a.device < 0 && pool != pool_devices_.end()) live.device = pool->second;
    live.kind = Kind::Block;
  } else if (!owns_memory(family) || is_host_family(family)) {
    return;
  }
  if (live.device < 0) return;  // host memory, or a block of a pool whose device is not known
  live.stack = stack_of(a);
  if (live.kind == Kind::Plain) add(VizAction::SegmentAlloc, live);
  live.alloc_entry = add(VizAction::Alloc, live);
  live_.insert_or_assign(live_key(a), live);
}

void MemoryVizCollector::on_reserve(const MemoryEvent& a, uint32_t pool) {
  pool_devices_[pool] = a.device;
  const auto it = live_.find(live_key(a));
  if (it == live_.end()) return;
  Live& live = it->second;
  live.kind = Kind::PoolSegment;
  // Its bytes are the pool's from now on: handed out as blocks, not as one allocation.
  if (live.alloc_entry >= first_entry_) entries_[live.alloc_entry - first_entry_].second = true;
}

void MemoryVizCollector::on_gone(const MemoryEvent& a) {
  const auto it = live_.find(live_key(a));
  if (it == live_.end()) return;
  const Live live = it->second;
  live_.erase(it);
  if (live.kind != Kind::PoolSegment) {
    add(VizAction::FreeRequested, live);
    add(VizAction::FreeCompleted, live);
  }
  if (live.kind != Kind::Block) add(VizAction::SegmentFree, live);
}

std::vector<report::VizSegment> MemoryVizCollector::segments() const {
  std::map<std::pair<int, uint64_t>, const Live*> segments, blocks;  // by device and address
  for (const auto& [key, live] : live_)
    (live.kind == Kind::Block ? blocks : segments)[{live.device, live.event.key}] = &live;
  std::vector<report::VizSegment> out;
  const auto block_of = [](const Live& l) { return report::VizBlock{l.event.key, l.event.bytes, true, l.stack}; };
  for (const auto& [at, live] : segments) {
    report::VizSegment s{
        live->device, live->event.key, live->event.bytes, live->kind == Kind::PoolSegment, live->stack, {}};
    if (!s.pool) {
      s.blocks.push_back(block_of(*live));
      out.push_back(std::move(s));
      continue;
    }
    // The pool's blocks inside it, and free blocks between them.
    uint64_t next = s.address;
    const uint64_t end = s.address + s.size;
    for (auto b = blocks.lower_bound({s.device, s.address});
         b != blocks.end() && b->first.first == s.device && b->first.second < end;) {
      const Live& block = *b->second;
      if (block.event.key > next) s.blocks.push_back({next, block.event.key - next, false, 0});
      s.blocks.push_back(block_of(block));
      next = std::max(next, block.event.key + block.event.bytes);
      b = blocks.erase(b);
    }
    if (next < end) s.blocks.push_back({next, end - next, false, 0});
    out.push_back(std::move(s));
  }
  // Blocks of a pool whose segments were never recorded: each its own, so that none is lost.
  for (const auto& [at, live] : blocks)
    out.push_back({live->device, live->event.key, live->event.bytes, true, live->stack, {block_of(*live)}});
  std::sort(out.begin(), out.end(), [](const report::VizSegment& a, const report::VizSegment& b) {
    return std::make_pair(a.device, a.address) < std::make_pair(b.device, b.address);
  });
  return out;
}

std::optional<report::MemoryViz> MemoryVizCollector::finish() {
  if (first_entry_ == 0 && entries_.empty()) return std::nullopt;  // no device memory was ever taken
  out_.segments = segments();
  for (const auto& [entry, dropped] : entries_) {
    if (!dropped) out_.entries.push_back(entry);
  }
  return std::move(out_);
}

}  // namespace cuaudit
