#include "migration_series.h"

#include <algorithm>
#include <map>

namespace cuaudit {

void add_migration_series(const ProcessTrace& trace, report::Timeline& timeline, size_t buckets) {
  using trace::MigrationKind;
  auto moves = [](const ManagedMigration& m) {
    return m.kind == MigrationKind::HostToDevice || m.kind == MigrationKind::DeviceToHost;
  };
  uint64_t first = UINT64_MAX, last = 0;
  for (const ManagedMigration& m : trace.managed_migrations) {
    if (!moves(m)) continue;
    first = std::min(first, m.end_ns);
    last = std::max(last, m.end_ns);
  }
  if (first > last || buckets == 0) return;
  // At least a millisecond a bucket: a short burst stays one bar, not a hundred slivers.
  const uint64_t width = std::max<uint64_t>((last - first) / buckets + 1, 1'000'000);
  const size_t count = static_cast<size_t>((last - first) / width) + 1;
  std::map<int, report::MigrationSeries> series;  // by device
  for (const ManagedMigration& m : trace.managed_migrations) {
    if (!moves(m)) continue;
    const bool to_device = m.kind == MigrationKind::HostToDevice;
    const int device = static_cast<int>(to_device ? m.dst_id : m.src_id);
    report::MigrationSeries& s = series[device];
    if (s.t.empty()) {
      s.to_device.assign(count, 0);
      s.to_host.assign(count, 0);
      for (size_t i = 0; i < count; ++i) s.t.push_back(trace.seconds_since_start(first + (i + 1) * width));
    }
    const size_t bucket = static_cast<size_t>((m.end_ns - first) / width);
    (to_device ? s.to_device : s.to_host)[bucket] += m.value;
  }
  for (auto& [device, s] : series) {
    s.pid = trace.pid;
    s.device = device;
    timeline.migration_series.push_back(std::move(s));
  }
}

}  // namespace cuaudit
