#include "call_recorder.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "event_clock.h"
#include "python_stack.h"
#include "stack_capture.h"
#include "stack_sampling.h"
#include "stage_stats.h"
#include "trace_format.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

// Tracked calls active on this thread, outermost first.
struct ActiveCall {
  Api api;
  uint64_t seq;       // frees: taken before the call, so a reuse of the address sorts after it
  uint64_t enter_ns;  // outermost call: when it started (the churn check's time inside calls)
};
constexpr int kMaxActive = 8;
struct ActiveCalls {
  ActiveCall calls[kMaxActive];
  int depth = 0;  // may exceed kMaxActive; deeper calls are nested and never recorded
};
thread_local ActiveCalls tls_active;

template <typename ContextRecord>
void write_context_record(uint32_t context_uid, int32_t device) noexcept {
  ContextRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.context_uid = context_uid;
  r.device = device;
  trace_writer().append(r);
}

// Callback ids whose name is already in the trace (runtime ids are below 1024).
constexpr uint32_t kMaxNamedCbid = 1024;
std::atomic<uint64_t> g_named[kMaxNamedCbid / 64];

void write_callback_name(uint32_t domain, uint32_t cbid, const char* name) noexcept {
  if (cbid >= kMaxNamedCbid || !name) return;
  const uint64_t bit = uint64_t{1} << (cbid % 64);
  if (g_named[cbid / 64].fetch_or(bit, std::memory_order_relaxed) & bit) return;
  trace::CallbackNameRecord r{};
  const size_t name_bytes = strnlen(name, 128);
  r.domain = domain;
  r.cbid = cbid;
  r.name_bytes = static_cast<uint32_t>(name_bytes);
  trace_writer().append_with_tail(r, name, name_bytes);
}

// Watch mode walks the stacks of a sample of the memory's allocations (stack_sampling.h); handles
// (streams, events, ...) are few and always have theirs.
bool takes_stack(const ApiInfo& info, const ApiCall& call) noexcept {
  if (!stacks_sampled() || !owns_memory(info.family)) return true;
  if (info.role == ApiRole::Alloc) return take_allocation_stack(call.bytes, call.result);
  return info.role != ApiRole::Free || take_release_stack(call.result);
}

}  // namespace

void on_runtime_call(CallFact fact, uint32_t domain, uint32_t cbid, const char* name, int32_t result,
                     const uint64_t (*pointers)[2]) noexcept {
  if (tls_active.depth > 0) return;  // made by CUDA itself inside a tracked call
  write_callback_name(domain, cbid, name);
  trace::CallRecord r{};
  r.stack_id = capture_stack();
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.tid = current_tid();
  r.result = result;
  r.cbid = cbid;
  r.domain = domain;
  switch (fact) {
    case CallFact::Failed:
      trace_writer().append(trace::FailedCallRecord{r});
      break;
    case CallFact::LastError:
      trace_writer().append(trace::LastErrorRecord{r});
      break;
    case CallFact::Site:
      trace_writer().append(trace::CallSiteRecord{r});
      break;
  }
  if (pointers) {
    trace::CallPointersRecord p{};
    p.seq = r.seq;
    p.pointers[0] = (*pointers)[0];
    p.pointers[1] = (*pointers)[1];
    trace_writer().append(p);
  }
}

void on_call_enter(Api api) noexcept {
  ActiveCalls& a = tls_active;
  if (a.depth < kMaxActive) {
    const bool is_free = api_info(api).role == ApiRole::Free;
    const bool outermost = a.depth == 0;
    a.calls[a.depth] = {api, outermost && is_free ? next_sequence() : 0, outermost ? monotonic_ns() : 0};
  }
  ++a.depth;
}

bool on_call_exit(const ApiCall& call) noexcept {
  ActiveCalls& a = tls_active;
  uint64_t pre_seq = 0, enter_ns = 0;
  if (a.depth > 0 && (a.depth > kMaxActive || a.calls[a.depth - 1].api == call.api)) {
    --a.depth;
    if (a.depth > 0) return false;    // nested inside another tracked call: that one is recorded
    if (call.captured) return false;  // stream capture: the graph's memory node was recorded
    pre_seq = a.calls[0].seq;
    enter_ns = a.calls[0].enter_ns;
  } else if (a.depth > 0) {
    return false;  // an exit without its enter, inside a tracked call: nested, not ours to record
  }
  const uint64_t exit_ns = monotonic_ns();

  const ApiInfo& info = api_info(call.api);
  trace::ApiEventRecord r{};
  const bool walk = takes_stack(info, call);
  r.stack_id = walk ? capture_stack() : trace::kNoStack;
  r.seq = pre_seq != 0 ? pre_seq : next_sequence();
  r.time_ns = exit_ns;
  if (enter_ns) r.call_ns = static_cast<uint32_t>(std::min<uint64_t>(exit_ns - enter_ns, UINT32_MAX));
  r.key = call.key;
  r.bytes = call.bytes;
  r.tid = current_tid();
  r.context_uid = call.context_uid;
  r.device = is_host_family(info.family) ? trace::kHostDevice : call.device;
  r.result = call.result;
  r.api = static_cast<uint16_t>(call.api);
  {
    const StageTimer timer(Stage::TraceAppend);
    trace_writer().append_memory_event(info.role == ApiRole::Alloc, r);
  }
  if (info.role == ApiRole::Alloc && call.result == 0 && call.handle_hash) {
    trace::SharedMemoryRecord shared{};
    shared.seq = r.seq;
    shared.time_ns = r.time_ns;
    shared.pointer = call.key;
    shared.handle_hash = call.handle_hash;
    shared.role = static_cast<uint32_t>(trace::SharedRole::Import);
    trace_writer().append(shared);
  }
  // A failed allocation too: an out-of-memory error is reported at the Python line that asked.
  if (info.role == ApiRole::Alloc && walk) record_python_stack_of(r.seq);
  if (call.result == 0) info.role == ApiRole::Alloc ? note_allocation() : note_release();
  if (call.result == 0 && info.role == ApiRole::Alloc &&
      (info.space == KeySpace::Address || info.space == KeySpace::VmmReservation || info.space == KeySpace::VmmMapping))
    note_handed_out(call.key, call.bytes);
  return true;
}

void record_python_stack_of(uint64_t seq) noexcept {
  uint64_t python = 0;
  {
    const StageTimer timer(Stage::PythonStack);
    python = capture_python_stack();
  }
  if (!python) return;
  trace::AllocPythonRecord p{};
  p.seq = seq;
  p.python_stack_id = python;
  p.launches = launches_so_far();
  trace_writer().append(p);
}

bool is_outermost_exit(Api api) noexcept {
  const ActiveCalls& a = tls_active;
  return a.depth == 0 || (a.depth == 1 && a.calls[0].api == api);
}

void on_memory_exported(uint64_t pointer, uint64_t handle_hash) noexcept {
  trace::SharedMemoryRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.pointer = pointer;
  r.handle_hash = handle_hash;
  r.role = static_cast<uint32_t>(trace::SharedRole::Export);
  trace_writer().append(r);
}

void record_memory_sample(int32_t device, uint64_t free_bytes, uint64_t total_bytes) noexcept {
  trace::MemorySampleRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.free_bytes = free_bytes;
  r.total_bytes = total_bytes;
  r.device = device;
  r.launches = launches_so_far();
  trace_writer().append(r);
}

void on_context_created(uint32_t context_uid, int32_t device) noexcept {
  write_context_record<trace::ContextCreatedRecord>(context_uid, device);
}

void on_context_destroyed(uint32_t context_uid, int32_t device) noexcept {
  write_context_record<trace::ContextDestroyedRecord>(context_uid, device);
  note_release();
}

void on_process_end() noexcept {
  trace::ProcessEndRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  trace_writer().append(r);
}

}  // namespace cuaudit::inject
