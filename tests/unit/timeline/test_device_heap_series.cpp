// The device heap's use on the timeline: a point after each launch's calls, what the live device
// allocations held then against the heap's size; no fragmentation claimed.
#include <doctest/doctest.h>

#include "device_heap_series.h"

using namespace cuaudit;
using trace::DeviceHeapCall;

namespace {

void launch(ProcessTrace& trace, uint64_t id, uint64_t time_ns, int32_t device, uint64_t heap_bytes = 8 << 20) {
  DeviceHeapLaunchFact l;
  l.launch_id = id;
  l.time_ns = time_ns;
  l.device = device;
  l.heap_bytes = heap_bytes;
  l.name = "_Z4workv";
  trace.device_heap_launches[id] = l;
}

void call(ProcessTrace& trace, uint64_t launch, DeviceHeapCall kind, uint64_t address, uint64_t bytes = 0) {
  trace.device_heap_calls.push_back({launch, 0x1000, address, bytes, kind});
}

}  // namespace

TEST_CASE("the device heap's use after each launch: kept nodes add up, freed scratch and NULL returns do not") {
  ProcessTrace trace;
  trace.pid = 7;
  trace.start_monotonic_ns = 1'000'000'000;
  launch(trace, 1, 1'100'000'000, 0);
  launch(trace, 2, 1'200'000'000, 0);
  launch(trace, 3, 1'300'000'000, 0);
  for (uint64_t t = 0; t < 4; ++t) call(trace, 1, DeviceHeapCall::Malloc, 0x7000 + 16 * t, 16);  // kept
  call(trace, 2, DeviceHeapCall::Malloc, 0x8000, 64);                                            // scratch
  call(trace, 2, DeviceHeapCall::Free, 0x8000);
  call(trace, 2, DeviceHeapCall::Free, 0x8000);                  // a double free takes nothing twice
  call(trace, 3, DeviceHeapCall::Malloc, 0, uint64_t(1) << 30);  // returned NULL
  call(trace, 3, DeviceHeapCall::Free, 0x7000);

  report::Timeline timeline;
  add_device_heap_series(trace, timeline);
  REQUIRE(timeline.pool_series.size() == 1);
  const report::PoolSeries& s = timeline.pool_series[0];
  CHECK(s.pid == 7);
  CHECK(s.pool == "device heap of device 0 (malloc in kernels)");
  CHECK_FALSE(s.fragmentation_measured);
  CHECK(s.t == std::vector<double>{0.1, 0.2, 0.3});
  CHECK(s.used == std::vector<uint64_t>{64, 64, 48});
  CHECK(s.reserved == std::vector<uint64_t>(3, 8 << 20));
  CHECK(s.free[2] == (8 << 20) - 48);
  CHECK(s.holes == std::vector<uint64_t>(3, 0));
}

TEST_CASE("each device's heap is a series of its own, and a run without device-heap calls has none") {
  ProcessTrace trace;
  report::Timeline timeline;
  add_device_heap_series(trace, timeline);
  CHECK(timeline.pool_series.empty());

  launch(trace, 1, 10, 0);
  launch(trace, 2, 20, 1, 1 << 20);
  call(trace, 1, DeviceHeapCall::Malloc, 0x7000, 32);
  call(trace, 2, DeviceHeapCall::Malloc, 0x9000, 128);
  add_device_heap_series(trace, timeline);
  REQUIRE(timeline.pool_series.size() == 2);
  CHECK(timeline.pool_series[0].used == std::vector<uint64_t>{32});
  CHECK(timeline.pool_series[1].pool == "device heap of device 1 (malloc in kernels)");
  CHECK(timeline.pool_series[1].used == std::vector<uint64_t>{128});
  CHECK(timeline.pool_series[1].reserved == std::vector<uint64_t>{1 << 20});
}
