// The cached CFI walk gives exactly the return addresses _Unwind_Backtrace gives, through frames
// of every shape the compiler makes (rsp-based, rbp-based with alloca, deep recursion, threads).
#include <doctest/doctest.h>

#include <alloca.h>

#include <boost/stacktrace/safe_dump_to.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "cfi_unwinder.h"

using cuaudit::inject::cfi_backtrace;

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

__attribute__((noinline)) Walks both_walks() {
  Walks w;
  uint64_t fast[128] = {}, slow[129] = {};
  w.fast_n = walk_fast(fast, 128);
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

}  // namespace

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
