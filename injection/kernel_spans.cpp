#include "kernel_spans.h"

#include <cstring>
#include <mutex>

#include "launch_recorder.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

// Kernel names seen in CUPTI's records -> their kernel ids, so each name is written once. Open
// addressing over a hash of the name (CUPTI's name pointers are not promised to stay the same);
// a full table leaves further kernels' runs unrecorded rather than growing in the target.
constexpr size_t kNameSlots = 1 << 14;
struct NameSlot {
  uint64_t hash;
  uint32_t kernel_id;
};
NameSlot g_names[kNameSlots];
// CUPTI completes buffers on its own thread and, at exit, on the flushing one.
std::mutex g_names_lock;

uint64_t name_hash(const char* name) noexcept {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull;
  return h | 1;  // never 0: 0 marks an empty slot
}

uint32_t kernel_id_of(const char* name) noexcept {
  const uint64_t hash = name_hash(name);
  std::lock_guard<std::mutex> hold(g_names_lock);
  for (size_t probe = 0; probe < kNameSlots; ++probe) {
    NameSlot& slot = g_names[(hash + probe) & (kNameSlots - 1)];
    if (slot.hash == hash) return slot.kernel_id;
    if (slot.hash == 0) {
      slot.hash = hash;
      slot.kernel_id = allocate_kernel_id();
      record_kernel(slot.kernel_id, name);
      return slot.kernel_id;
    }
  }
  return 0;
}

}  // namespace

bool enable_kernel_spans() noexcept {
  // CONCURRENT_KERNEL, not KERNEL: the latter serialises the program's kernels.
  return cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS;
}

bool record_kernel_span(const CUpti_Activity* record, int64_t offset) noexcept {
  if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) return false;
  const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
  if (kernel->start == 0 || kernel->end < kernel->start) return false;  // not timed (CUPTI says 0 when it could not)
  const uint32_t id = kernel_id_of(kernel->name ? kernel->name : "?");
  if (id == 0) return false;
  trace::KernelSpanRecord r{};
  r.start_ns = static_cast<uint64_t>(static_cast<int64_t>(kernel->start) + offset);
  r.end_ns = static_cast<uint64_t>(static_cast<int64_t>(kernel->end) + offset);
  r.kernel_id = id;
  r.device = kernel->deviceId;
  r.stream = kernel->streamId;
  trace_writer().append(r);
  return true;
}

}  // namespace cuaudit::inject
