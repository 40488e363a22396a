#include "cupti_unified_memory.h"

#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "event_clock.h"
#include "in_target_log.h"
#include "kernel_spans.h"
#include "notice_writer.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

std::atomic<bool> g_started{false};
std::atomic<bool> g_enabled{false};

// CUPTI's counters, in the trace's own words (the tool never sees CUPTI's numbering).
bool migration_kind(CUpti_ActivityUnifiedMemoryCounterKind kind, trace::MigrationKind& out) noexcept {
  switch (kind) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
      out = trace::MigrationKind::HostToDevice;
      return true;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
      out = trace::MigrationKind::DeviceToHost;
      return true;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT:
      out = trace::MigrationKind::CpuPageFault;
      return true;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
      out = trace::MigrationKind::GpuPageFault;
      return true;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING:
      out = trace::MigrationKind::Thrashing;
      return true;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING:
      out = trace::MigrationKind::Throttling;
      return true;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP:
      out = trace::MigrationKind::RemoteMap;
      return true;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD:
      out = trace::MigrationKind::DeviceToDevice;
      return true;
    default:
      return false;
  }
}

// CUPTI's timestamps (CLOCK_REALTIME on Linux unless told otherwise) on the injection's clock.
int64_t cupti_to_monotonic_offset() noexcept {
  uint64_t cupti_now = 0;
  if (cuptiGetTimestamp(&cupti_now) != CUPTI_SUCCESS || cupti_now == 0) return 0;
  return static_cast<int64_t>(monotonic_ns()) - static_cast<int64_t>(cupti_now);
}

constexpr size_t kBufferBytes = 1 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // CUPTI's worker asks; records must be 8-byte aligned.
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (buffer) record_unified_memory_buffer(buffer, valid);
  free(buffer);
}

void say_unavailable(CUptiResult result) noexcept {
  const char* why = nullptr;
  cuptiGetResultString(result, &why);
  char text[320];
  snprintf(text, sizeof text,
           "CUPTI gives no unified-memory records on this host (%s): managed memory's migrations and page faults "
           "are not measured (NVIDIA documents this for ARM hosts such as Grace)",
           why ? why : "unknown error");
  write_notice(trace::NoticeCode::UnifiedMemoryUnavailable, text);
}

}  // namespace

size_t record_unified_memory_buffer(uint8_t* buffer, size_t valid_bytes) noexcept {
  const int64_t offset = cupti_to_monotonic_offset();
  size_t written = 0;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) {
      written += record_kernel_span(record, offset);
      continue;
    }
    const auto* um = reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter3*>(record);
    trace::MigrationKind kind;
    if (!migration_kind(um->counterKind, kind)) continue;
    trace::ManagedMigrationRecord r{};
    r.start_ns = static_cast<uint64_t>(static_cast<int64_t>(um->start) + offset);
    r.end_ns = um->end ? static_cast<uint64_t>(static_cast<int64_t>(um->end) + offset) : r.start_ns;
    r.address = um->address;
    r.value = um->value;
    r.src_id = um->srcId;
    r.dst_id = um->dstId;
    r.kind = static_cast<uint8_t>(kind);
    // CUPTI's causes share the trace's numbers (MigrationCause); one this build does not know is Unknown.
    if ((kind == trace::MigrationKind::HostToDevice || kind == trace::MigrationKind::DeviceToHost) &&
        um->flags <= CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS)
      r.cause = static_cast<uint8_t>(um->flags);
    trace_writer().append(r);
    ++written;
  }
  return written;
}

void start_unified_memory_records() noexcept {
  if (g_started.exchange(true)) return;
  CUpti_ActivityUnifiedMemoryCounterConfig config[6] = {};
  const CUpti_ActivityUnifiedMemoryCounterKind kinds[6] = {
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING};
  for (int i = 0; i < 6; ++i) {
    config[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    config[i].kind = kinds[i];
    config[i].deviceId = 0;
    config[i].enable = 1;
  }
  CUptiResult r = cuptiActivityConfigureUnifiedMemoryCounter(config, 6);
  if (r != CUPTI_SUCCESS) {
    say_unavailable(r);
    return;
  }
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
  if (r != CUPTI_SUCCESS) {
    say_unavailable(r);
    return;
  }
  g_enabled = true;
  if (!enable_kernel_spans())
    log_warning("CUPTI gives no kernel records: managed memory's migrations are not tied to kernels");
}

void flush_unified_memory_records() noexcept {
  if (!g_enabled) return;
  const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS) log_warning("could not flush CUPTI's unified-memory records (CUPTI error %d)", r);
}

}  // namespace cuaudit::inject
