#include "migration_kernels.h"

#include <algorithm>

#include <fmt/format.h>

#include "kernel_names.h"
#include "report_model.h"

namespace cuaudit {
namespace {

// Looked at, walking back from the last run that started before the moment: enough for the
// streams of one device to overlap, bounded so a hostile trace cannot make it quadratic.
constexpr size_t kMaxRunsLookedAt = 256;

}  // namespace

KernelRuns::KernelRuns(const std::vector<KernelSpan>& spans) : spans_(spans) {
  for (size_t i = 0; i < spans.size(); ++i) by_device_[spans[i].device].order.push_back(i);
  for (auto& [device, runs] : by_device_) {
    std::stable_sort(runs.order.begin(), runs.order.end(),
                     [&](size_t a, size_t b) { return spans[a].start_ns < spans[b].start_ns; });
    runs.latest_end.reserve(runs.order.size());
    uint64_t end = 0;
    for (size_t i : runs.order) runs.latest_end.push_back(end = std::max(end, spans[i].end_ns));
  }
}

std::vector<size_t> KernelRuns::running_at(uint32_t device, uint64_t time) const {
  std::vector<size_t> found;
  const auto it = by_device_.find(device);
  if (it == by_device_.end()) return found;
  const std::vector<size_t>& runs = it->second.order;
  const std::vector<uint64_t>& latest = it->second.latest_end;
  // The runs that started at or before `time`; of those, the ones not over yet. `latest` says
  // when no earlier run can still be going.
  size_t i = static_cast<size_t>(
      std::upper_bound(runs.begin(), runs.end(), time, [&](uint64_t t, size_t r) { return t < spans_[r].start_ns; }) -
      runs.begin());
  for (size_t looked = 0; i > 0 && looked < kMaxRunsLookedAt; ++looked) {
    --i;
    if (latest[i] < time) break;
    if (spans_[runs[i]].end_ns >= time) found.push_back(runs[i]);
  }
  return found;
}

void add_kernel_migration(const KernelRuns& runs, const std::vector<KernelSpan>& spans, const ManagedMigration& m,
                          std::unordered_map<uint32_t, KernelMigrations>& kernels) {
  if (runs.empty()) return;
  uint32_t device = 0;
  if (m.kind == trace::MigrationKind::GpuPageFault) {
    device = m.src_id;  // the device that faulted
  } else if (m.kind == trace::MigrationKind::HostToDevice && m.cause != trace::MigrationCause::User) {
    device = m.dst_id;
  } else {
    return;
  }
  for (size_t run : runs.running_at(device, m.start_ns)) {
    KernelMigrations& k = kernels[spans[run].kernel_id];
    if (m.kind == trace::MigrationKind::GpuPageFault) {
      k.gpu_faults += std::max<uint64_t>(m.value, 1);
      k.runs.insert(run);
    } else {
      k.to_device += m.value;
    }
  }
}

std::string describe_kernel_migrations(const std::unordered_map<uint32_t, KernelMigrations>& kernels,
                                       const std::unordered_map<uint32_t, std::string>& names, size_t most) {
  std::vector<std::pair<uint32_t, const KernelMigrations*>> order;
  for (const auto& [id, k] : kernels) order.emplace_back(id, &k);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(a.second->gpu_faults, a.second->to_device, b.first) >
           std::make_tuple(b.second->gpu_faults, b.second->to_device, a.first);
  });
  std::string text;
  for (size_t i = 0; i < order.size() && i < most; ++i) {
    const auto name = names.find(order[i].first);
    const KernelMigrations& k = *order[i].second;
    if (!text.empty()) text += "; ";
    text += fmt::format("`{}`: {} GPU page fault(s), {} to the device",
                        name == names.end() ? std::string("?") : kernel_display_name(name->second), k.gpu_faults,
                        report::human_bytes(k.to_device));
    if (!k.runs.empty()) text += fmt::format(", in {} run(s)", k.runs.size());
  }
  if (order.size() > most) text += fmt::format("; and {} more kernel(s)", order.size() - most);
  return text;
}

}  // namespace cuaudit
