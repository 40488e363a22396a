#include "device_heap_series.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace cuaudit {

namespace {

struct Block {
  uint64_t bytes = 0;
  int32_t device = -1;
};

}  // namespace

void add_device_heap_series(const ProcessTrace& trace, report::Timeline& timeline) {
  if (trace.device_heap_calls.empty()) return;
  std::unordered_map<uint64_t, Block> live;  // by address: the heaps of all devices share one address space
  std::map<int32_t, uint64_t> used;          // by device
  std::map<int32_t, report::PoolSeries> series;
  // The point after launch `id`'s calls: the device's use then, at the launch's time.
  auto point = [&](uint64_t id) {
    const auto l = trace.device_heap_launches.find(id);
    if (l == trace.device_heap_launches.end()) return;  // its launch record was lost: no time to chart it at
    const DeviceHeapLaunchFact& launch = l->second;
    report::PoolSeries& s = series[launch.device];
    const uint64_t in_use = used[launch.device];
    const uint64_t size = std::max(launch.heap_bytes, in_use);
    // Launches running side by side interleave their calls: a later point never goes back in time.
    const double t = trace.seconds_since_start(launch.time_ns);
    s.t.push_back(s.t.empty() ? t : std::max(t, s.t.back()));
    s.reserved.push_back(size);
    s.used.push_back(in_use);
    s.free.push_back(size - in_use);
    s.largest_free.push_back(0);
    s.holes.push_back(0);
  };
  uint64_t current = trace.device_heap_calls.front().launch_id;
  for (const DeviceHeapCallFact& call : trace.device_heap_calls) {
    if (call.launch_id != current) point(current), current = call.launch_id;
    if (call.kind == trace::DeviceHeapCall::Malloc) {
      if (!call.address) continue;  // returned NULL: nothing held
      const auto l = trace.device_heap_launches.find(call.launch_id);
      const int32_t device = l == trace.device_heap_launches.end() ? -1 : l->second.device;
      if (live.emplace(call.address, Block{call.bytes, device}).second) used[device] += call.bytes;
    } else if (const auto b = live.find(call.address); b != live.end()) {
      used[b->second.device] -= b->second.bytes;
      live.erase(b);
    }
  }
  point(current);
  for (auto& [device, s] : series) {
    s.pid = trace.pid;
    s.pool = fmt::format("device heap of device {} (malloc in kernels)", device);
    s.fragmentation_measured = false;
    timeline.pool_series.push_back(std::move(s));
  }
}

}  // namespace cuaudit
