#include "stack_capture.h"

#include <boost/stacktrace/safe_dump_to.hpp>
#include <cstring>

#include "module_map.h"
#include "seen_ids.h"
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
  uint64_t frames[trace::kMaxStackDepth + 1];
  // safe_dump_to (_Unwind_Backtrace underneath) allocates nothing; it stores a terminating zero.
  // Skip this function's own frame: the tool drops the remaining in-tool and CUDA frames.
  size_t n = boost::stacktrace::safe_dump_to(1, frames, sizeof frames);
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
