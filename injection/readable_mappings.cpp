#include "readable_mappings.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

#include "event_clock.h"
#include "in_target_log.h"

namespace cuaudit::inject {
namespace {

constexpr size_t kRanges = 32768;         // a PyTorch process maps a few thousand ranges
constexpr uint64_t kRereadNs = 10000000;  // 10 ms between re-reads at least
// ... and 100 times what the last one took: a process with thousands of mappings takes milliseconds
// to list them, which must stay a small share of its time however often new values come.
constexpr uint64_t kRereadShare = 100;

// The copy: readable ranges [start, end), sorted, adjacent ones joined. Written under the flag,
// between two bumps of `sequence` (odd while writing); read between two equal even values.
std::atomic<uint64_t> g_start[kRanges], g_end[kRanges];
std::atomic<size_t> g_count{0};
std::atomic<bool> g_complete{false};  // every readable mapping fit
std::atomic<uint64_t> g_sequence{0};
std::atomic<uint64_t> g_next_read{0};                // monotonic ns before which none is made
std::atomic<uint64_t> g_rereads{0}, g_reread_ns{0};  // for CUAUDIT_STATS=1
std::atomic_flag g_writing = ATOMIC_FLAG_INIT;

uint64_t hex(const char*& p, const char* end) noexcept {
  uint64_t v = 0;
  for (; p < end; ++p) {
    const char c = *p;
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) break;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

// One line "start-end perms ...": its range when readable.
void add_line(const char* p, const char* end, size_t& n, bool& complete) noexcept {
  const uint64_t start = hex(p, end);
  if (p >= end || *p++ != '-') return;
  const uint64_t stop = hex(p, end);
  if (p + 1 >= end || p[1] != 'r') return;
  if (n && g_end[n - 1].load(std::memory_order_relaxed) == start) {
    g_end[n - 1].store(stop, std::memory_order_relaxed);
  } else if (n < kRanges) {
    g_start[n].store(start, std::memory_order_relaxed), g_end[n].store(stop, std::memory_order_relaxed);
    ++n;
  } else {
    complete = false;
  }
}

void reread() noexcept {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  g_sequence.fetch_add(1, std::memory_order_acq_rel);  // odd: readers ask the kernel meanwhile
  static char buffer[16384];                           // only the writer (under g_writing) uses it
  size_t n = 0, kept = 0;
  bool complete = true;
  ssize_t got;
  while ((got = read(fd, buffer + kept, sizeof buffer - kept)) > 0) {
    const char* p = buffer;
    const char* end = buffer + kept + got;
    for (const char* nl; p < end && (nl = static_cast<const char*>(memchr(p, '\n', end - p))); p = nl + 1)
      add_line(p, nl, n, complete);
    kept = static_cast<size_t>(end - p);
    memmove(buffer, p, kept);  // a line cut by the read: the next read completes it
  }
  close(fd);
  if (got < 0) complete = false;  // the rest unread: a missing address proves nothing
  g_count.store(n, std::memory_order_relaxed);
  g_complete.store(complete, std::memory_order_relaxed);
  g_sequence.fetch_add(1, std::memory_order_acq_rel);
}

// The copy's answer: 1 readable, 0 not in it, -1 it cannot say.
int look_up(uint64_t address) noexcept {
  const uint64_t before = g_sequence.load(std::memory_order_acquire);
  if (before & 1) return -1;
  size_t lo = 0, hi = g_count.load(std::memory_order_relaxed);
  while (lo < hi) {  // the first range ending after the address
    const size_t mid = (lo + hi) / 2;
    if (g_end[mid].load(std::memory_order_relaxed) <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  const bool in =
      lo < g_count.load(std::memory_order_relaxed) && g_start[lo].load(std::memory_order_relaxed) <= address;
  const bool complete = g_complete.load(std::memory_order_relaxed);
  if (g_sequence.load(std::memory_order_acquire) != before) return -1;
  return in ? 1 : complete ? 0 : -1;
}

// Pages the copy said no readable mapping holds, so that asking about them again re-reads nothing:
// the same integers come back at every step. Each slot: the page and the launch-clock generation
// (every 16,384 launches) it was seen in; a later generation asks again.
constexpr size_t kAbsentSlots = 1024;
std::atomic<uint64_t> g_absent[kAbsentSlots];

uint64_t absent_key(uint64_t address) noexcept {
  return ((address >> 12) << 8 | ((launches_so_far() >> 14) & 0xff)) << 1 | 1;
}

std::atomic<uint64_t>& absent_slot(uint64_t address) noexcept {
  const uint64_t page = address >> 12;
  return g_absent[(page ^ (page >> 10) ^ (page >> 20)) % kAbsentSlots];
}

}  // namespace

std::optional<bool> in_readable_mapping(uint64_t address) noexcept {
  int answer = look_up(address);  // -1 before the first read: the copy is empty and incomplete
  if (answer == 1) return true;
  const uint64_t key = absent_key(address);
  if (answer == 0 && absent_slot(address).load(std::memory_order_relaxed) == key) return false;
  // Not in the copy and not seen before: the process may have mapped it since the copy was read.
  const uint64_t now = monotonic_ns();
  if (now >= g_next_read.load(std::memory_order_relaxed) && !g_writing.test_and_set(std::memory_order_acquire)) {
    reread();
    const uint64_t took = monotonic_ns() - now;
    g_next_read.store(now + std::max(kRereadNs, kRereadShare * took), std::memory_order_relaxed);
    g_rereads.fetch_add(1, std::memory_order_relaxed), g_reread_ns.fetch_add(took, std::memory_order_relaxed);
    g_writing.clear(std::memory_order_release);
    answer = look_up(address);
  }
  if (answer == 1) return true;
  if (answer < 0) return std::nullopt;
  absent_slot(address).store(key, std::memory_order_relaxed);
  return false;
}

void log_mapping_stats() noexcept {
  log_info("readable mappings: %zu in the copy, read %llu time(s) in %.1f ms in all",
           g_count.load(std::memory_order_relaxed), static_cast<unsigned long long>(g_rereads.load()),
           static_cast<double>(g_reread_ns.load()) / 1e6);
}

}  // namespace cuaudit::inject
