// The cached CFI walk gives exactly the return addresses _Unwind_Backtrace gives, through frames
// of every shape the compiler makes (rsp-based, rbp-based with alloca, deep recursion, threads),
// and so does every walk finished from the thread's last one (walk_memo.h): whatever changed
// between two walks, a caller further out, the depth, the frames' rbp, the max asked for.
#include <doctest/doctest.h>

#include <alloca.h>

#include <boost/stacktrace/safe_dump_to.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "cfi_unwinder.h"
#include "walk_memo.h"

using cuaudit::inject::cfi_backtrace;
using cuaudit::inject::WalkMemo;
using cuaudit::inject::WalkStep;

namespace {

struct Walks {
  std::vector<uint64_t> fast, slow;
  int fast_n = 0;
};

// Both walks from one function, each through a helper of its own: the frames above the helpers
// are the same stack.
__attribute__((noinline)) int walk_fast(uint64_t* out, size_t max) {
  const int n = cfi_backtrace(out, max);
  asm volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) size_t walk_slow(uint64_t* out, size_t max) {
  const size_t n = boost::stacktrace::safe_dump_to(1, out, max * sizeof(uint64_t));
  asm volatile("" ::: "memory");
  return n;
}

// `max`: the fast walk's (at most 128).
__attribute__((noinline)) Walks both_walks(size_t max = 128) {
  Walks w;
  uint64_t fast[128] = {}, slow[129] = {};
  w.fast_n = walk_fast(fast, max);
  size_t s = walk_slow(slow, 129);
  while (s > 0 && slow[s - 1] == 0) --s;
  if (w.fast_n > 0) w.fast.assign(fast, fast + w.fast_n);
  w.slow.assign(slow, slow + s);
  asm volatile("" ::: "memory");
  return w;
}

// The two lists from the frame above the helpers' call sites on: identical.
void check_same_stack(const Walks& w) {
  REQUIRE(w.fast_n > 2);
  REQUIRE(w.slow.size() > 2);
  // fast[0] and slow[0] are the two call sites in both_walks; from there up the stack is shared.
  CHECK(w.fast.size() == w.slow.size());
  const size_t n = std::min(w.fast.size(), w.slow.size());
  for (size_t i = 1; i < n; ++i) CHECK(w.fast[i] == w.slow[i]);
}

__attribute__((noinline)) Walks recurse(int depth) {
  if (depth == 0) return both_walks();
  Walks w = recurse(depth - 1);
  asm volatile("" ::: "memory");  // not a tail call
  return w;
}

// rbp-based frames: a variable-size alloca makes the compiler keep a frame pointer and define the
// CFA from rbp.
__attribute__((noinline)) Walks with_alloca(size_t bytes, int depth) {
  char* buffer = static_cast<char*>(alloca(bytes));
  memset(buffer, depth, bytes);
  Walks w = depth == 0 ? both_walks() : with_alloca(bytes + 16, depth - 1);
  asm volatile("" ::: "memory");
  w.fast.reserve(w.fast.size() + (buffer[0] & 1));
  return w;
}

// A local wider than the ABI's 16-byte stack alignment beside a variable-size alloca makes GCC
// realign the stack through a saved pointer (DRAP): the CFA is then *(rbp - 8) and rbp is saved at
// rbp + 0 (DWARF expressions), as in cuBLAS's frames.
__attribute__((noinline)) Walks realigned(size_t bytes, int depth) {
  alignas(64) volatile char wide[64];
  char* dynamic = static_cast<char*>(alloca(bytes));
  memset(dynamic, depth, bytes);
  wide[0] = dynamic[0];
  Walks w = depth == 0 ? both_walks() : realigned(bytes + 8, depth - 1);
  asm volatile("" ::: "memory");
  w.fast.reserve(w.fast.size() + (wide[0] & 1));
  return w;
}

volatile int g_side_effect = 0;

// Two call sites of the same function in one frame: every frame below them has the same registers
// in both, and only the return address into this function tells the two stacks apart.
__attribute__((noinline)) Walks from_two_sites(bool first, int depth) {
  Walks w;
  if (first) {
    w = recurse(depth);
    g_side_effect = g_side_effect + 1;
  } else {
    w = recurse(depth);
    g_side_effect = g_side_effect + 2;
  }
  asm volatile("" ::: "memory");
  return w;
}

__attribute__((noinline)) Walks from_two_callers(bool first, int depth) {
  Walks w = first ? from_two_sites(true, depth) : from_two_sites(false, depth);
  g_side_effect = g_side_effect + 3;
  return w;
}

// rbp, restored by a frame-pointer frame between the walk and the meeting: a different value in
// it must not finish the walk from the last one when a rule further out reads it.
__attribute__((noinline)) Walks through_frame_pointer(size_t bytes, bool first) {
  char* buffer = static_cast<char*>(alloca(bytes));
  memset(buffer, 1, bytes);
  Walks w = from_two_callers(first, 2);
  asm volatile("" ::: "memory");
  w.fast.reserve(w.fast.size() + (buffer[0] & 1));
  return w;
}

}  // namespace

TEST_CASE("a walk finished from the thread's last walk is the walk") {
  // The same call sites again and again, other callers alternating, other depths, other sizes of
  // a frame-pointer frame: every walk must be the one _Unwind_Backtrace makes.
  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    check_same_stack(from_two_sites(true, 3));
    check_same_stack(from_two_sites(false, 3));
    check_same_stack(from_two_callers(round % 2 == 0, 3));
    check_same_stack(from_two_callers(round % 2 == 1, 3));
    check_same_stack(from_two_sites(true, 5));
    check_same_stack(from_two_sites(true, 2));
    check_same_stack(through_frame_pointer(64 + 16 * round, true));
    check_same_stack(through_frame_pointer(64, false));
    check_same_stack(recurse(70));  // longer than a walk that is kept
    check_same_stack(recurse(10));
  }
}

// Walks from one call site (both_walks' walk_fast), with the max given: each walk meets the last
// one at its first frame.
__attribute__((noinline)) void walks_from_one_site(const std::vector<size_t>& maxes, std::vector<Walks>& out) {
  for (size_t max : maxes) out.push_back(both_walks(max));
}

TEST_CASE("a walk cut at max is finished only as far as the last one says") {
  const std::vector<size_t> maxes = {3, 128, 2, 128, 128, 5, 4, 128, 1};
  std::vector<Walks> walks;
  std::thread t([&] { walks_from_one_site(maxes, walks); });  // a thread of its own: no walk before
  t.join();
  REQUIRE(walks.size() == maxes.size());
  for (size_t i = 0; i < maxes.size(); ++i) {
    CAPTURE(i);
    const Walks& w = walks[i];
    REQUIRE(w.slow.size() > 3);
    CHECK(w.fast.size() == std::min(maxes[i], w.slow.size()));
    for (size_t k = 1; k < w.fast.size() && k < w.slow.size(); ++k) CHECK(w.fast[k] == w.slow[k]);
  }
}

// The memo on its own, over a made-up stack of four frames: words it reads, rbp restored by one
// frame and read by the rule of the next (a frame pointer), or by none.
struct MadeUpStack {
  uint64_t words[16] = {};
  WalkStep steps[5];
  uint64_t frames[8] = {};

  // Frame i's return address at words[2i], the rbp it restores at words[2i + 1]; frame 2 restores
  // rbp (unless not `restored`) and frame 3's rule starts from it when `frame_pointer_above`.
  void walk_into(WalkMemo& memo, bool frame_pointer_above, bool restored = true) {
    for (int i = 0; i < 5; ++i) {
      WalkStep& s = steps[i];
      s.start(0x1000 + i, 0x7000 + 0x100 * i, 0x5555);
      if (i == 4) break;  // the end of the stack: no rule, nothing read
      s.ra = s.read(reinterpret_cast<uint64_t>(&words[2 * i]));
      if (i == 2 && restored) s.restores_bp = true, s.read(reinterpret_cast<uint64_t>(&words[2 * i + 1]));
      if (i == 3) s.uses_bp = frame_pointer_above;
    }
    memo.keep(steps, 5, false);
  }
  int finish(WalkMemo& memo, size_t& at) { return memo.finish(at, 0, 0, frames, 8, steps, memo); }
};

TEST_CASE("the memo checks a restored rbp only where a rule further out reads it") {
  for (bool frame_pointer_above : {false, true}) {
    CAPTURE(frame_pointer_above);
    MadeUpStack stack;
    for (int i = 0; i < 8; ++i) stack.words[2 * i] = 0x400000 + i, stack.words[2 * i + 1] = 0x7fff00 + i;
    WalkMemo memo;
    stack.walk_into(memo, frame_pointer_above);
    size_t from = 0, at = memo.meeting(from, 0x1000, 0x7000, 0x5555);
    REQUIRE(at == 0);
    CHECK(stack.finish(memo, at) == 3);  // frames 1-3; frame 0's is the walker's caller
    CHECK(stack.frames[0] == 0x400001);
    CHECK(stack.frames[2] == 0x400003);
    stack.words[5] = 0xdead;  // the rbp frame 2 restored
    at = 0;
    CHECK(stack.finish(memo, at) == (frame_pointer_above ? -1 : 3));
    if (frame_pointer_above) CHECK(at == 2);  // the step that read it: meeting there or before fails
    stack.words[5] = 0x7fff02;
    stack.words[2] = 0x400999;  // frame 1's return address: always read
    at = 0;
    CHECK(stack.finish(memo, at) == -1);
    CHECK(at == 1);
    // rbp at a meeting matters only where a rule further out reads it before it is restored: at
    // frame 0 never (frame 2 restores it before frame 3 reads it), at frame 3 where its rule does.
    from = 0;
    CHECK(memo.meeting(from, 0x1000, 0x7000, 0x6666) == 0);
    from = 0;
    CHECK(memo.meeting(from, 0x1003, 0x7300, 0x6666) == (frame_pointer_above ? WalkMemo::kMaxSteps : 3));
    // No frame between restores it: rbp at frame 0 is the one frame 3's rule reads.
    WalkMemo unrestored;
    stack.walk_into(unrestored, frame_pointer_above, false);
    from = 0;
    CHECK(unrestored.meeting(from, 0x1000, 0x7000, 0x6666) == (frame_pointer_above ? WalkMemo::kMaxSteps : 0));
  }
}

TEST_CASE("the cached CFI walk returns what _Unwind_Backtrace returns") {
  check_same_stack(both_walks());
  check_same_stack(recurse(10));
  check_same_stack(recurse(40));
  check_same_stack(with_alloca(100, 5));
  check_same_stack(realigned(40, 3));
  // The second time through, every rule comes from the cache: still the same.
  check_same_stack(recurse(10));
  CHECK(cuaudit::inject::cfi_cached_rules() > 0);
}

TEST_CASE("the cached CFI walk works on other threads and stops at max") {
  Walks w;
  std::thread t([&] { w = recurse(5); });
  t.join();
  check_same_stack(w);
  uint64_t frames[3];
  CHECK(walk_fast(frames, 3) == 3);
}
