// A fast stack walk for x86-64: the return addresses of the calling thread, found from each
// function's DWARF call frame information like _Unwind_Backtrace does, but with the rule of each
// return address cached process-wide, so that a stack seen before costs a table lookup and two
// loads per frame instead of finding and interpreting its FDE again (about 250 ns a frame on the
// H200). Only the simple rules compilers emit for ordinary frames are cached (the canonical frame
// address at rsp or rbp plus an offset, the return address and rbp saved at offsets from it);
// anything else (signal frames, DWARF expressions, realigned stacks) makes the walk give up, and
// the caller falls back to _Unwind_Backtrace for that stack. A walk that meets one of the thread's
// last two walks in the same registers is finished from it, its stack words checked instead of
// walked (walk_memo.h). Allocates nothing, takes no lock.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit::inject {

// Fills `frames` with the return addresses of the caller of cfi_backtrace's caller, its caller and
// so on, innermost first (as boost::stacktrace::safe_dump_to(1, ...) from that caller would), at
// most `max` of them. Returns how many, or -1 when a frame's rule is one this walker does not know
// (then nothing it wrote is meaningful). Always -1 on other architectures.
int cfi_backtrace(uint64_t* frames, size_t max) noexcept;

// How many rules the cache holds (tests, CUAUDIT_STATS).
size_t cfi_cached_rules() noexcept;

// CUAUDIT_STATS=1, at exit: how many walks there were, how many finished from one of the thread's
// last two walks (walk_memo.h), how many rules are cached.
void log_unwind_stats() noexcept;

}  // namespace cuaudit::inject
