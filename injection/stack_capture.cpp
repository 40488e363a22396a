#include "stack_capture.h"

#include <boost/stacktrace/safe_dump_to.hpp>
#include <cstring>

#include "cfi_unwinder.h"
#include "module_map.h"
#include "seen_ids.h"
#include "stage_stats.h"
#include "trace_format.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

thread_local SeenIds tls_seen;

// murmur3's finalizer: every input bit reaches every output bit.
inline uint64_t mix(uint64_t h) noexcept {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// A stack's id, by its content. Four lanes take every fourth frame, so their multiplications do not
// wait for each other: one chain over 20 frames (xor, multiply, shift in turn) was about 220
// instructions and 50 ns of latency a stack, a third of a pool block's event. Within a lane a
// frame is xored and multiplied by an odd constant (a bijection), so stacks that differ in one frame
// differ in its lane; the lanes and the depth are mixed at the end.
uint64_t hash_frames(const uint64_t* frames, size_t n) noexcept {
  constexpr uint64_t kOdd = 0x9e3779b97f4a7c15ull;
  uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull, c = 0xa4093822299f31d0ull, d = 0x082efa98ec4e6c89ull;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a = (a ^ frames[i]) * kOdd;
    b = (b ^ frames[i + 1]) * kOdd;
    c = (c ^ frames[i + 2]) * kOdd;
    d = (d ^ frames[i + 3]) * kOdd;
  }
  if (i < n) a = (a ^ frames[i++]) * kOdd;
  if (i < n) b = (b ^ frames[i++]) * kOdd;
  if (i < n) c = (c ^ frames[i++]) * kOdd;
  const uint64_t h = mix(mix(mix(mix(a ^ n) ^ b) ^ c) ^ d);
  return h == trace::kNoStack ? 1 : h;
}

}  // namespace

void forget_written_stacks() noexcept { tls_seen.clear(); }

uint64_t capture_stack() noexcept {
  const StageTimer timer(Stage::StackCapture);
  uint64_t frames[trace::kMaxStackDepth + 1];
  // The cached CFI walk first (a lookup and two loads a frame once a stack's rules are known); where
  // it cannot follow a frame (a signal frame, a DWARF expression), safe_dump_to (_Unwind_Backtrace
  // underneath), which gives the same frames: both allocate nothing and start at our caller. The
  // tool drops the remaining in-tool and CUDA frames.
  size_t n = 0;
  {
    const StageTimer unwind(Stage::Unwind);
    const int fast = cfi_backtrace(frames, trace::kMaxStackDepth + 1);
    if (fast >= 0) {
      n = static_cast<size_t>(fast);
    } else {
      const StageTimer fallback(Stage::UnwindFallback);
      n = boost::stacktrace::safe_dump_to(1, frames, sizeof frames);
    }
  }
  while (n > 0 && frames[n - 1] == 0) --n;
  if (n == 0) return trace::kNoStack;

  const uint64_t id = hash_frames(frames, n);
  if (tls_seen.check_and_insert(id)) return id;

  ensure_modules_recorded(frames, n);
  trace::StackRecord record{};
  record.id = id;
  record.depth = static_cast<uint32_t>(n);
  trace_writer().append_with_tail(record, frames, n * sizeof(uint64_t));
  return id;
}

}  // namespace cuaudit::inject
