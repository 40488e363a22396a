#include "migration_findings.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "pool_picture.h"

namespace cuaudit {
namespace {

using trace::MigrationKind;

// The unit a page's moves are followed in: the driver migrates 4 KiB to 2 MiB at a time.
constexpr uint64_t kUnitShift = 16;
// A record covering more units than this is followed at every stride-th one.
constexpr uint64_t kMaxUnitsPerRecord = 16384;

// Where each unit of one allocation last went, and how often it came back to a device.
struct UnitMoves {
  struct Unit {
    bool on_host = false;  // its last move was to the host
    bool moved = false;
    uint64_t trips = 0;
  };
  std::unordered_map<uint64_t, Unit> units;

  uint64_t move(uint64_t address, uint64_t bytes, bool to_device) {
    const uint64_t first = address >> kUnitShift, last = (address + std::max<uint64_t>(bytes, 1) - 1) >> kUnitShift;
    const uint64_t count = last - first + 1, stride = count > kMaxUnitsPerRecord ? count / kMaxUnitsPerRecord : 1;
    uint64_t most = 0;
    for (uint64_t u = first; u <= last; u += stride) {
      Unit& unit = units[u];
      if (to_device && unit.moved && unit.on_host) ++unit.trips;
      unit.on_host = !to_device;
      unit.moved = true;
      most = std::max(most, unit.trips);
    }
    return most;
  }
};

// The range that held `address` at `time`, or nullptr: ranges sorted by address, the newest
// of several at one address first found from the back.
const ManagedRanges::Range* range_at(const std::vector<const ManagedRanges::Range*>& by_address, uint64_t address,
                                     uint64_t time) {
  auto it = std::upper_bound(by_address.begin(), by_address.end(), address,
                             [](uint64_t a, const ManagedRanges::Range* r) { return a < r->address; });
  for (int looked = 0; it != by_address.begin() && looked < 64; ++looked) {
    const ManagedRanges::Range* r = *--it;
    if (address - r->address >= r->bytes) continue;
    if (r->from_ns <= time && time <= r->to_ns) return r;
  }
  return nullptr;
}

void add(MigrationTally& t, UnitMoves& moves, const ManagedMigration& m) {
  ++t.records;
  switch (m.kind) {
    case MigrationKind::HostToDevice:
      t.to_device += m.value;
      t.round_trips = std::max(t.round_trips, moves.move(m.address, m.value, true));
      break;
    case MigrationKind::DeviceToHost:
      t.to_host += m.value;
      t.round_trips = std::max(t.round_trips, moves.move(m.address, m.value, false));
      break;
    case MigrationKind::DeviceToDevice:
      t.between_devices += m.value;
      break;
    case MigrationKind::CpuPageFault:
      ++t.cpu_faults;
      break;
    case MigrationKind::GpuPageFault:
      t.gpu_faults += std::max<uint64_t>(m.value, 1);
      break;
    case MigrationKind::Thrashing:
      ++t.thrashing;
      break;
    case MigrationKind::Throttling:
      ++t.throttling;
      break;
    case MigrationKind::RemoteMap:
      ++t.remote_maps;
      break;
  }
}

std::string figures(const MigrationTally& t) {
  std::string s = fmt::format("{} to the device and {} to the host in {} record(s)", report::human_bytes(t.to_device),
                              report::human_bytes(t.to_host), t.records);
  if (t.gpu_faults || t.cpu_faults) s += fmt::format("; {} GPU and {} CPU page fault(s)", t.gpu_faults, t.cpu_faults);
  if (t.thrashing) s += fmt::format("; the driver reported thrashing {} time(s)", t.thrashing);
  if (t.throttling) s += fmt::format(" and throttled {} time(s)", t.throttling);
  return s;
}

}  // namespace

void ManagedRanges::on_live(const MemoryEvent& allocation) {
  if (api_info(allocation.api).family != MemoryFamily::Managed) return;
  live_[allocation.key] = ranges_.size();
  ranges_.push_back({allocation.key, allocation.bytes, allocation.time_ns, UINT64_MAX, allocation.stack_id,
                     allocation.python_stack_id, allocation.api, allocation.device});
}

void ManagedRanges::on_released(const MemoryEvent& allocation, const MemoryEvent& release) {
  const auto it = live_.find(allocation.key);
  if (it == live_.end()) return;
  ranges_[it->second].to_ns = release.time_ns;
  live_.erase(it);
}

std::vector<MigrationTally> tally_migrations(const std::vector<ManagedMigration>& migrations,
                                             const std::vector<ManagedRanges::Range>& ranges, uint64_t& unattributed,
                                             const std::vector<KernelSpan>& spans) {
  const KernelRuns runs(spans);
  std::vector<const ManagedRanges::Range*> by_address;
  for (const auto& r : ranges) by_address.push_back(&r);
  std::stable_sort(by_address.begin(), by_address.end(), [](const auto* a, const auto* b) {
    return a->address < b->address || (a->address == b->address && a->from_ns < b->from_ns);
  });
  // CUPTI hands buffers over as they fill: a page's moves are followed in the order they happened.
  std::vector<size_t> order(migrations.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return migrations[a].start_ns < migrations[b].start_ns; });
  std::vector<MigrationTally> tallies(ranges.size());
  std::vector<UnitMoves> moves(ranges.size());
  unattributed = 0;
  for (size_t i : order) {
    const ManagedMigration& m = migrations[i];
    const ManagedRanges::Range* r = range_at(by_address, m.address, m.start_ns);
    if (!r) {
      ++unattributed;
      continue;
    }
    const size_t index = static_cast<size_t>(r - ranges.data());
    add(tallies[index], moves[index], m);
    add_kernel_migration(runs, spans, m, tallies[index].kernels);
  }
  return tallies;
}

std::vector<report::Finding> migration_findings(const ProcessTrace& trace, const ManagedRanges& ranges,
                                                StackResolver& stacks, const MigrationOptions& options) {
  std::vector<report::Finding> findings;
  if (trace.managed_migrations.empty()) return findings;
  uint64_t unattributed = 0;
  const std::vector<MigrationTally> tallies =
      tally_migrations(trace.managed_migrations, ranges.ranges(), unattributed, trace.kernel_spans);
  for (size_t i = 0; i < tallies.size(); ++i) {
    const MigrationTally& t = tallies[i];
    const ManagedRanges::Range& r = ranges.ranges()[i];
    if (t.to_device + t.to_host < options.min_bytes) continue;
    if (t.round_trips < options.min_round_trips && t.thrashing == 0) continue;
    const std::string moved = figures(t);
    report::Finding f;
    f.kind = report::FindingKind::ManagedMigration;
    f.severity = report::Severity::Warning;
    f.api = std::string(api_info(stacks.api_called(r.stack_id, r.api)).name);
    f.bytes = r.bytes;
    f.count = t.round_trips;
    f.pid = trace.pid;
    f.address = r.address;
    if (r.device >= 0) f.device = r.device;
    f.headline =
        fmt::format("Managed memory migrating back and forth: {} from {}, pages back on a device {} time(s), at:",
                    report::human_bytes(r.bytes), f.api, t.round_trips);
    f.message = fmt::format(
        "{} of managed memory went back and forth between host and device: {}; some of its pages came back to a "
        "device {} time(s) after going to the host",
        report::human_bytes(r.bytes), moved, t.round_trips);
    f.notes.push_back(moved);
    if (!t.kernels.empty()) {
      const std::string kernels = describe_kernel_migrations(t.kernels, trace.kernels);
      f.message += "; the kernels whose page faults pulled it to the device: " + kernels;
      f.notes.push_back("kernels whose page faults pulled it to the device: " + kernels);
    } else if (trace.kernel_spans.empty() && t.gpu_faults) {
      f.notes.push_back("the kernels involved are not known: this trace has no record of kernels' runs");
    }
    // A Python program's allocation is its Python line (a pool's native frames are not the user's).
    f.stack = block_stack(trace, r.stack_id, r.python_stack_id, stacks);
    findings.push_back(std::move(f));
  }
  std::sort(findings.begin(), findings.end(), [](const report::Finding& a, const report::Finding& b) {
    return a.count > b.count || (a.count == b.count && a.bytes > b.bytes);
  });
  return findings;
}

std::vector<report::Finding> migration_findings(const ProcessTrace& trace, StackResolver& stacks,
                                                const MigrationOptions& options) {
  ManagedRanges ranges;
  replay(trace, &ranges);
  return migration_findings(trace, ranges, stacks, options);
}

}  // namespace cuaudit
