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

uint64_t hash_frames(const uint64_t* frames, size_t n) noexcept {
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  for (size_t i = 0; i < n; ++i) {
    h ^= frames[i];
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
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
