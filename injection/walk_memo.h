// A thread's last stack walk, kept so that the next one can stop walking where the two stacks meet.
// A walk is a function of the registers it starts a frame with (the instruction address, rsp and
// rbp) and of the stack words it reads: when a walk reaches a frame in exactly the state the last
// walk had there, and every word the last walk read from there on still holds the value it read,
// walking on would read the same words, apply the same cached rules and find the same return
// addresses. They are copied instead: a load and a compare per word, instead of a rule lookup and
// its checks per frame. Allocations come from a few sites under the same outer frames (main, the
// training loop, the framework's dispatch), so most walks meet the last one a few frames in.
// Only the simple frames cfi_unwinder.cpp follows are kept; a walk it gives up on is not kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cuaudit::inject {

// One frame of a walk as the walker made it: the registers it started from, the words it read and
// what it found.
struct WalkStep {
  uint64_t target, sp, bp;             // the instruction whose rule applies, rsp and rbp
  uint64_t ra;                         // the return address found; 0: the walk ended at this frame
  static constexpr int kMaxReads = 3;  // the CFA (when it is *(rbp + offset)), the return address, rbp
  const uint64_t* read_at[kMaxReads];
  uint64_t read_value[kMaxReads];
  uint8_t reads;
  bool uses_bp;      // this frame's rule starts from rbp (a frame pointer or a realigned stack)
  bool restores_bp;  // its last read is the caller's rbp

  void start(uint64_t at, uint64_t rsp, uint64_t rbp) noexcept {
    target = at, sp = rsp, bp = rbp, ra = 0, reads = 0, uses_bp = false, restores_bp = false;
  }
  uint64_t read(uint64_t address) noexcept {
    const auto* at = reinterpret_cast<const uint64_t*>(address);
    const uint64_t value = *at;
    read_at[reads] = at, read_value[reads] = value, ++reads;
    return value;
  }
};

// The last whole walk, from cfi_backtrace's own frame (step 0, whose return address is not
// reported) to the frame that ended it, laid out for the next walk: the registers of each step to
// meet it, the return addresses to copy, and the words to check, outermost first, so that the
// words of the steps from any step outwards are the first ones.
class WalkMemo {
 public:
  static constexpr size_t kMaxSteps = 72;  // a 64-frame stack, the skipped frame and the end

  // The step that starts in exactly the registers given, at or after `from` (steps' rsp rise along
  // a walk, so a caller walking outwards passes `from` on); kMaxSteps if none. rbp is a register
  // like any other in most optimized code: where no rule further out reads it before a frame
  // restores it, its value does not matter.
  size_t meeting(size_t& from, uint64_t target, uint64_t sp, uint64_t bp) const noexcept {
    while (from < count_ && sp_[from] < sp) ++from;
    if (from < count_ && sp_[from] == sp && target_[from] == target && (bp_[from] == bp || !bp_matters_[from]))
      return from;
    return kMaxSteps;
  }

  // Finishes a walk that met step `at` as its own step `step`, with `n` frames found so far and its
  // steps so far in `walked`: the frames from there on, each word checked, into `frames` (at most
  // `max` in all). Returns the frames in all, and keeps the walk in `into` (this memo, or another
  // one, so that this one stays for walks like it) where it fits. Returns -1 when a word changed or
  // the memo cannot say (it stopped at a max before the frames this walk will have), changing
  // nothing; `at` is then a step a meeting at or before would fail at too.
  int finish(size_t& at, size_t step, size_t n, uint64_t* frames, size_t max, const WalkStep* walked,
             WalkMemo& into) noexcept {
    const size_t last = count_ - 1, first = at + (step == 0 ? 1 : 0);
    const size_t frames_left = first <= last ? last - first + 1 - (ra_[last] == 0 ? 1 : 0) : 0;
    if (by_max_ && n + frames_left < max) {  // the last walk stopped at a max before this walk's
      at = count_;
      return -1;
    }
    const size_t changed = first_changed(checks_from_[at]);
    if (changed != kNoneChanged) {
      while (at + 1 < count_ && checks_from_[at + 1] > changed) ++at;  // the step that read it
      return -1;
    }
    const size_t copied = frames_left < max - n ? frames_left : max - n;
    memcpy(frames + n, ra_ + first, copied * sizeof(uint64_t));
    // Kept where this walk ends at the step the last one ended at, and fits.
    const bool same_end = by_max_ ? n + frames_left == max : n + frames_left < max;
    if (same_end && step + (last - at) < kMaxSteps) {
      into.take_steps(*this, at, step);
      into.add_walked(walked, step, into.bp_matters_[step], into.checks_from_[step]);
    }
    return static_cast<int>(n + copied);
  }

  // Keeps a whole walk of `steps` steps, which ended at its stack's end or, by_max, at max frames.
  void keep(const WalkStep* walked, size_t steps, bool by_max) noexcept {
    count_ = steps;
    by_max_ = by_max;
    add_walked(walked, steps, false, 0);
  }

 private:
  // Steps [0, steps) from `walked`, below the steps kept from `steps` on (whose words are the first
  // `checks` and whose rbp matters as `bp_matters_after` says): what matters found backwards, each
  // restored rbp checked only where a rule further out reads it.
  void add_walked(const WalkStep* walked, size_t steps, bool bp_matters_after, size_t checks) noexcept {
    bool live = bp_matters_after;
    for (size_t i = steps; i-- > 0;) {
      const WalkStep& s = walked[i];
      target_[i] = s.target, sp_[i] = s.sp, bp_[i] = s.bp, ra_[i] = s.ra;
      for (int r = 0; r < s.reads; ++r) {
        if (r == s.reads - 1 && s.restores_bp && !live) continue;
        check_at_[checks] = s.read_at[r], check_value_[checks] = s.read_value[r], ++checks;
      }
      live = s.uses_bp || (!s.restores_bp && live);
      bp_matters_[i] = live;
      checks_from_[i] = static_cast<uint16_t>(checks);
    }
  }

  // The first of words [0, checks) found changed, innermost first (where the stacks differ, another
  // caller, they differ close to the meeting). The words are where the last walk found its frames:
  // on this thread's stack above the meeting, but where this stack has other frames they may be a
  // local's redzone to AddressSanitizer, hence no instrumentation.
  static constexpr size_t kNoneChanged = ~size_t{0};
  __attribute__((no_sanitize("address"))) size_t first_changed(size_t checks) const noexcept {
    for (size_t k = checks; k-- > 0;)
      if (*check_at_[k] != check_value_[k]) return k;
    return kNoneChanged;
  }

  // `source`'s steps from `from` on (this memo's own, moved, or the other memo's, copied), to start
  // at `to` here. The words of those steps are the first ones in either, so only a copy takes them.
  void take_steps(const WalkMemo& source, size_t from, size_t to) noexcept {
    const bool own = &source == this;
    const size_t taken = source.count_ - from;
    if (own && from == to) return;
    memmove(target_ + to, source.target_ + from, taken * sizeof(uint64_t));
    memmove(sp_ + to, source.sp_ + from, taken * sizeof(uint64_t));
    memmove(bp_ + to, source.bp_ + from, taken * sizeof(uint64_t));
    memmove(ra_ + to, source.ra_ + from, taken * sizeof(uint64_t));
    memmove(bp_matters_ + to, source.bp_matters_ + from, taken * sizeof(bool));
    memmove(checks_from_ + to, source.checks_from_ + from, taken * sizeof(uint16_t));
    if (!own) {
      const size_t checks = source.checks_from_[from];
      memcpy(check_at_, source.check_at_, checks * sizeof(check_at_[0]));
      memcpy(check_value_, source.check_value_, checks * sizeof(uint64_t));
      by_max_ = source.by_max_;
    }
    count_ = to + taken;
  }

  size_t count_ = 0;     // 0: nothing to finish from (none yet, or the walk was not one to keep)
  bool by_max_ = false;  // it ended because the frames reached the caller's max, not the stack's end
  uint64_t target_[kMaxSteps], sp_[kMaxSteps], bp_[kMaxSteps], ra_[kMaxSteps];
  bool bp_matters_[kMaxSteps];
  uint16_t checks_from_[kMaxSteps];  // the words of this step and those further out: the first ones
  const uint64_t* check_at_[kMaxSteps * WalkStep::kMaxReads];
  uint64_t check_value_[kMaxSteps * WalkStep::kMaxReads];
};

}  // namespace cuaudit::inject
