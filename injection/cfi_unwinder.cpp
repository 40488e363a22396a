#include "cfi_unwinder.h"

#include <atomic>
#include <cstring>

#include "eh_frame.h"
#include "in_target_log.h"
#include "stage_stats.h"
#include "walk_memo.h"

namespace cuaudit::inject {

#if defined(__x86_64__)

// libgcc's lookup of the FDE covering `pc` (exported by libgcc_s since GCC 3.0; the one the
// program's own exception handling and _Unwind_Backtrace use).
struct dwarf_eh_bases {
  void* tbase;
  void* dbase;
  void* func;
};
extern "C" const void* _Unwind_Find_FDE(const void* pc, dwarf_eh_bases* bases);

namespace {

// What a frame's call frame information says, reduced to what a walk needs. Packed in 64 bits
// for the cache: kind, how the CFA and the caller's rbp are found, the return address's slot, and
// the offsets. Besides the ordinary frames (CFA at rsp or rbp plus an offset, registers saved at
// slots of the CFA), the frames GCC and NVCC make to realign the stack for wide vector locals:
// CFA = *(rbp + offset) (DW_OP_breg6; DW_OP_deref), rbp saved at rbp + offset (DW_OP_breg6).
enum Kind : uint64_t { kNormal = 1, kEndOfStack = 2, kUnsupported = 3 };
enum CfaMode : uint64_t { kCfaRsp = 0, kCfaRbp = 1, kCfaDerefRbp = 2 };
enum RbpMode : uint64_t { kRbpUnchanged = 0, kRbpAtCfa = 1, kRbpAtRbp = 2 };
struct Rule {
  Kind kind = kUnsupported;
  CfaMode cfa = kCfaRsp;
  RbpMode rbp = kRbpUnchanged;
  int8_t ra_slot = 0;   // return address at CFA + 8 * ra_slot
  int8_t rbp_slot = 0;  // saved rbp at CFA (kRbpAtCfa) or rbp (kRbpAtRbp) + 8 * rbp_slot
  int32_t cfa_offset = 0;
};

uint64_t pack(const Rule& r) {
  return static_cast<uint64_t>(r.kind) | (static_cast<uint64_t>(r.cfa) << 4) | (static_cast<uint64_t>(r.rbp) << 6) |
         (static_cast<uint64_t>(static_cast<uint8_t>(r.ra_slot)) << 8) |
         (static_cast<uint64_t>(static_cast<uint8_t>(r.rbp_slot)) << 16) |
         (static_cast<uint64_t>(static_cast<uint32_t>(r.cfa_offset)) << 32);
}

Rule unpack(uint64_t v) {
  Rule r;
  r.kind = static_cast<Kind>(v & 15);
  r.cfa = static_cast<CfaMode>((v >> 4) & 3);
  r.rbp = static_cast<RbpMode>((v >> 6) & 3);
  r.ra_slot = static_cast<int8_t>((v >> 8) & 0xff);
  r.rbp_slot = static_cast<int8_t>((v >> 16) & 0xff);
  r.cfa_offset = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
  return r;
}

// The rule at `target` (an instruction address inside the function), from its FDE.
Rule compute_rule(uint64_t target) {
  Rule rule;
  dwarf_eh_bases bases{};
  const auto* fde = static_cast<const uint8_t*>(_Unwind_Find_FDE(reinterpret_cast<const void*>(target), &bases));
  // No unwind information: the end of the stack, or a signal trampoline that libgcc unwinds
  // through by recognizing its code; either way _Unwind_Backtrace knows better.
  if (!fde) return rule;
  uint32_t length;
  memcpy(&length, fde, 4);
  if (length == 0 || length == 0xffffffffu) return rule;
  int32_t cie_offset;
  memcpy(&cie_offset, fde + 4, 4);
  Cie cie;
  if (!parse_cie(fde + 4 - cie_offset, cie)) return rule;
  Reader r{fde + 8, fde + 4 + length};
  r.skip_encoded(cie.fde_encoding);         // pc_begin (libgcc decoded it: bases.func)
  r.skip_encoded(cie.fde_encoding & 0x0f);  // pc_range
  if (cie.has_augmentation_data) r.p += r.uleb();
  if (!r.ok || r.p > r.end) return rule;

  const uint64_t start = reinterpret_cast<uint64_t>(bases.func);
  RowState row;
  if (!run_cfa(Reader{cie.instructions, cie.end}, cie, start, UINT64_MAX, row, row)) return rule;
  const RowState initial = row;
  if (!run_cfa(r, cie, start, target, row, initial)) return rule;

  if (row.ra == RowState::Undefined) {
    rule.kind = kEndOfStack;
    return rule;
  }
  if (row.cfa_bad || (row.cfa_register != kRsp && row.cfa_register != kRbp) || row.ra != RowState::Saved ||
      row.rbp == RowState::Bad || row.rbp == RowState::Undefined)
    return rule;
  if (row.ra_offset % 8 || row.rbp_offset % 8 || row.ra_offset / 8 < -128 || row.ra_offset / 8 > 127 ||
      row.rbp_offset / 8 < -128 || row.rbp_offset / 8 > 127 || row.cfa_offset < INT32_MIN || row.cfa_offset > INT32_MAX)
    return rule;
  if (row.cfa_deref && row.cfa_register != kRbp) return rule;
  rule.kind = kNormal;
  rule.cfa = row.cfa_deref ? kCfaDerefRbp : row.cfa_register == kRbp ? kCfaRbp : kCfaRsp;
  rule.rbp = row.rbp == RowState::Saved ? kRbpAtCfa : row.rbp == RowState::SavedAtRbp ? kRbpAtRbp : kRbpUnchanged;
  rule.ra_slot = static_cast<int8_t>(row.ra_offset / 8);
  rule.rbp_slot = static_cast<int8_t>(row.rbp_offset / 8);
  rule.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  return rule;
}

// --- The process-wide cache ---------------------------------------------------------------------
// Insert-only, lock-free: a slot's key goes 0 -> kBusy (claimed) -> address (published after its
// rule). A reader that meets kBusy computes the rule itself.
constexpr size_t kSlots = 1 << 14;
constexpr size_t kProbes = 16;
constexpr uint64_t kBusy = 1;
std::atomic<uint64_t> g_keys[kSlots];
std::atomic<uint64_t> g_rules[kSlots];
std::atomic<size_t> g_cached{0};

Rule rule_at(uint64_t target) {
  const size_t home = static_cast<size_t>((target * 0x9e3779b97f4a7c15ull) >> 50);
  for (size_t i = 0; i < kProbes; ++i) {
    const size_t slot = (home + i) & (kSlots - 1);
    const uint64_t key = g_keys[slot].load(std::memory_order_acquire);
    if (key == target) return unpack(g_rules[slot].load(std::memory_order_relaxed));
    if (key == 0) {
      const Rule rule = compute_rule(target);
      uint64_t expected = 0;
      if (g_keys[slot].compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) {
        g_rules[slot].store(pack(rule), std::memory_order_relaxed);
        g_keys[slot].store(target, std::memory_order_release);
        g_cached.fetch_add(1, std::memory_order_relaxed);
      }
      return rule;
    }
  }
  return compute_rule(target);  // a crowded neighbourhood: correct, only slower
}

constexpr uint64_t kMaxFrameBytes = uint64_t{64} << 20;

// Each thread's last two walks (allocations and releases take turns, from other sites under the
// same frames) and the steps of the one being made (walk_memo.h); `busy` while a walk uses them, so
// that a walk from a signal handler that interrupted one walks without them.
struct ThreadWalks {
  WalkMemo memos[2];
  int newest = 0;
  WalkStep steps[WalkMemo::kMaxSteps];
  bool busy = false;
};
thread_local ThreadWalks tls_walks;

std::atomic<uint64_t> g_walks{0}, g_finished_from_memo{0};  // counted only for CUAUDIT_STATS=1

// Finishes the walk at `depth` from one of the thread's last walks that it meets there, the newest
// first; -1 if none. `meet_from`: where each memo's next meeting can be.
int finish_from_memos(ThreadWalks& t, size_t meet_from[2], size_t depth, uint64_t target, uint64_t sp, uint64_t bp,
                      size_t n, uint64_t* frames, size_t max) noexcept {
  for (int tried = 0, m = t.newest; tried < 2; ++tried, m = 1 - m) {
    size_t at = t.memos[m].meeting(meet_from[m], target, sp, bp);
    if (at == WalkMemo::kMaxSteps) continue;
    // A walk that met a memo where it started is that walk again: kept in its place. One that
    // differs in its first frames (another site) is kept in place of the other memo.
    const int into = depth == 0 ? m : 1 - m;
    const int finished = t.memos[m].finish(at, depth, n, frames, max, t.steps, t.memos[into]);
    if (finished >= 0) {
      t.newest = into;
      if (g_stage_stats) g_finished_from_memo.fetch_add(1, std::memory_order_relaxed);
      return finished;
    }
    meet_from[m] = at + 1;  // a word changed since (a different caller): the stacks may meet further out
  }
  return -1;
}

// The walk from the registers given, its steps kept in `t` and finished from its memos where they
// meet (null: a walk that keeps nothing).
int walk(uint64_t target, uint64_t sp, uint64_t bp, uint64_t* frames, size_t max, ThreadWalks* t) noexcept {
  size_t n = 0, meet_from[2] = {0, 0};
  for (size_t depth = 0; depth < 512; ++depth) {
    if (t && depth < WalkMemo::kMaxSteps) {
      const int finished = finish_from_memos(*t, meet_from, depth, target, sp, bp, n, frames, max);
      if (finished >= 0) return finished;
    }
    WalkStep scratch;
    WalkStep& step = t && depth < WalkMemo::kMaxSteps ? t->steps[depth] : scratch;
    step.start(target, sp, bp);
    const Rule rule = rule_at(target);
    if (rule.kind == kNormal) {
      step.uses_bp = rule.cfa != kCfaRsp || rule.rbp == kRbpAtRbp;
      step.restores_bp = rule.rbp != kRbpUnchanged;
      // Every address read is on this thread's stack above the frame being left: a rule that would
      // take the walk backwards or far away is not one to follow.
      auto on_stack = [sp](uint64_t a) { return a >= sp && a - sp < kMaxFrameBytes && !(a & 7); };
      uint64_t cfa = (rule.cfa == kCfaRsp ? sp : bp) + static_cast<int64_t>(rule.cfa_offset);
      if (rule.cfa == kCfaDerefRbp) cfa = on_stack(cfa) ? step.read(cfa) : 0;
      if (cfa <= sp || !on_stack(cfa)) return -1;
      step.ra = step.read(cfa + 8 * rule.ra_slot);
      if (rule.rbp != kRbpUnchanged) {
        const uint64_t saved = (rule.rbp == kRbpAtCfa ? cfa : bp) + 8 * static_cast<int64_t>(rule.rbp_slot);
        if (!on_stack(saved)) return -1;
        bp = step.read(saved);
      }
      sp = cfa;
    } else if (rule.kind != kEndOfStack) {
      return -1;
    }
    bool ended = step.ra == 0;
    if (!ended && depth > 0) {  // step 0's return address is into our caller: not reported
      frames[n++] = step.ra;
      ended = n == max;
    }
    if (ended) {
      if (t && depth < WalkMemo::kMaxSteps) {  // in place of the older memo
        t->newest = 1 - t->newest;
        t->memos[t->newest].keep(t->steps, depth + 1, step.ra != 0);
      }
      return static_cast<int>(n);
    }
    target = step.ra - 1;  // the call instruction: the rule in effect while the callee ran
  }
  return static_cast<int>(n);
}

}  // namespace

__attribute__((noinline)) int cfi_backtrace(uint64_t* frames, size_t max) noexcept {
  uint64_t ip, sp, bp;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
  if (max == 0) return 0;
  if (g_stage_stats) g_walks.fetch_add(1, std::memory_order_relaxed);
  ThreadWalks& t = tls_walks;
  if (t.busy) return walk(ip, sp, bp, frames, max, nullptr);
  t.busy = true;
  const int n = walk(ip, sp, bp, frames, max, &t);
  t.busy = false;
  return n;
}

void log_unwind_stats() noexcept {
  const uint64_t walks = g_walks.load(std::memory_order_relaxed);
  const uint64_t finished = g_finished_from_memo.load(std::memory_order_relaxed);
  log_info(
      "stack walks: %llu, %llu of them finished from one of the thread's last two (%.1f%%); %zu frame rules cached",
      static_cast<unsigned long long>(walks), static_cast<unsigned long long>(finished),
      walks ? 100.0 * static_cast<double>(finished) / static_cast<double>(walks) : 0.0, cfi_cached_rules());
}

size_t cfi_cached_rules() noexcept { return g_cached.load(std::memory_order_relaxed); }

#else

int cfi_backtrace(uint64_t*, size_t) noexcept { return -1; }
size_t cfi_cached_rules() noexcept { return 0; }
void log_unwind_stats() noexcept {}

#endif

}  // namespace cuaudit::inject
