#include "bounded_facts.h"

#include <algorithm>
#include <tuple>

namespace cuaudit {

void thin_samples(ProcessTrace& process) {
  std::vector<MemorySample>& samples = process.samples;
  std::stable_sort(samples.begin(), samples.end(), [](const MemorySample& a, const MemorySample& b) {
    return std::tie(a.device, a.seq) < std::tie(b.device, b.seq);
  });
  size_t kept = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (i + 1 < samples.size() && samples[i + 1].device == samples[i].device) {
      const MemorySample& a = samples[i];
      const MemorySample& b = samples[i + 1];
      MemorySample higher = a.free_bytes < b.free_bytes ? a : b;
      higher.launches = std::max(a.launches, b.launches);
      samples[kept++] = higher;
      ++i;
    } else {
      samples[kept++] = samples[i];
    }
  }
  process.samples_thinned += samples.size() - kept;
  samples.resize(kept);
}

void keep_migration(ProcessTrace& process, const ManagedMigration& m) {
  if (process.managed_migrations.size() < kMaxManagedMigrations) {
    process.managed_migrations.push_back(m);
    if (m.cause > trace::MigrationCause::AccessCounters) process.managed_migrations.back().cause = {};
  } else {
    ++process.managed_migrations_dropped;
  }
}

bool keep_kernel_span(ProcessTrace& process, const KernelSpan& span) {
  if (span.end_ns < span.start_ns) return false;
  if (process.kernel_spans.size() < kMaxKernelSpans) {
    process.kernel_spans.push_back(span);
  } else {
    ++process.kernel_spans_dropped;
  }
  return true;
}

void keep_device_heap_call(ProcessTrace& process, const DeviceHeapCallFact& call) {
  if (process.device_heap_calls.size() < kMaxDeviceHeapCalls) {
    process.device_heap_calls.push_back(call);
  } else {
    ++process.device_heap_calls_dropped;
  }
}

}  // namespace cuaudit
