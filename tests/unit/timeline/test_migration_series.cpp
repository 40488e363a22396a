// Managed memory moved per device on the timeline: unified memory's host-to-device and
// device-to-host bytes summed in equal time buckets, by the device they moved to or from.
#include <doctest/doctest.h>

#include <numeric>

#include "migration_series.h"

using namespace cuaudit;
using trace::MigrationKind;

namespace {

void moved(ProcessTrace& trace, MigrationKind kind, uint64_t end_ns, uint64_t bytes, uint32_t device) {
  ManagedMigration m;
  m.start_ns = end_ns - 1000;
  m.end_ns = end_ns;
  m.address = 0x7f0000000000;
  m.value = bytes;
  m.kind = kind;
  (kind == MigrationKind::HostToDevice ? m.dst_id : m.src_id) = device;
  trace.managed_migrations.push_back(m);
}

uint64_t sum(const std::vector<uint64_t>& v) { return std::accumulate(v.begin(), v.end(), uint64_t{0}); }

}  // namespace

TEST_CASE("bytes moved each way per device, in buckets, while page faults and thrashing move nothing") {
  ProcessTrace trace;
  trace.pid = 5;
  trace.start_monotonic_ns = 1'000'000'000;
  const uint64_t ms = 1'000'000;
  for (int round = 0; round < 10; ++round) {  // every 10 ms: to the device, then back 5 ms later
    moved(trace, MigrationKind::HostToDevice, 1'000'000'000 + round * 10 * ms, 2 << 20, 0);
    moved(trace, MigrationKind::DeviceToHost, 1'000'000'000 + round * 10 * ms + 5 * ms, 2 << 20, 0);
  }
  moved(trace, MigrationKind::HostToDevice, 1'000'000'000 + 50 * ms, 64 << 10, 1);
  moved(trace, MigrationKind::GpuPageFault, 1'000'000'000 + 20 * ms, 7, 0);
  moved(trace, MigrationKind::Thrashing, 1'000'000'000 + 30 * ms, 1 << 30, 0);

  report::Timeline timeline;
  add_migration_series(trace, timeline, 100);
  REQUIRE(timeline.migration_series.size() == 2);
  const report::MigrationSeries& d0 = timeline.migration_series[0];
  CHECK(d0.pid == 5);
  CHECK(d0.device == 0);
  CHECK(sum(d0.to_device) == 20u << 20);
  CHECK(sum(d0.to_host) == 20u << 20);
  // 95 ms of records in buckets of at least 1 ms: 96 buckets, the first ending 1 ms in.
  CHECK(d0.t.size() == 96);
  CHECK(d0.to_device.size() == d0.t.size());
  CHECK(d0.t.front() == doctest::Approx(0.001));
  CHECK(d0.to_device[0] == 2u << 20);
  CHECK(d0.to_host[5] == 2u << 20);
  CHECK(d0.to_device[5] == 0);
  const report::MigrationSeries& d1 = timeline.migration_series[1];
  CHECK(d1.device == 1);
  CHECK(sum(d1.to_device) == 64u << 10);
  CHECK(sum(d1.to_host) == 0);
}

TEST_CASE("a run without migrations has no migration series") {
  ProcessTrace trace;
  moved(trace, MigrationKind::CpuPageFault, 5'000, 0x401000, 0);
  report::Timeline timeline;
  add_migration_series(trace, timeline);
  CHECK(timeline.migration_series.empty());
}
