#include "readable_mappings.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#include "event_clock.h"

namespace cuaudit::inject {
namespace {

constexpr size_t kRanges = 8192;          // a PyTorch process maps a few thousand ranges
constexpr uint64_t kRereadNs = 10000000;  // 10 ms between re-reads

// The copy: readable ranges [start, end), sorted, adjacent ones joined. Written under the flag,
// between two bumps of `sequence` (odd while writing); read between two equal even values.
std::atomic<uint64_t> g_start[kRanges], g_end[kRanges];
std::atomic<size_t> g_count{0};
std::atomic<bool> g_complete{false};  // every readable mapping fit
std::atomic<uint64_t> g_sequence{0};
std::atomic<uint64_t> g_read_at{0};  // monotonic ns of the last re-read; 0: never
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
  for (ssize_t got; (got = read(fd, buffer + kept, sizeof buffer - kept)) > 0;) {
    const char* p = buffer;
    const char* end = buffer + kept + got;
    for (const char* nl; p < end && (nl = static_cast<const char*>(memchr(p, '\n', end - p))); p = nl + 1)
      add_line(p, nl, n, complete);
    kept = static_cast<size_t>(end - p);
    memmove(buffer, p, kept);  // a line cut by the read: the next read completes it
  }
  close(fd);
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

}  // namespace

std::optional<bool> in_readable_mapping(uint64_t address) noexcept {
  const int answer = g_read_at.load(std::memory_order_relaxed) ? look_up(address) : -1;
  if (answer == 1) return true;
  const uint64_t now = monotonic_ns(), read_at = g_read_at.load(std::memory_order_relaxed);
  if ((read_at == 0 || now - read_at >= kRereadNs) && !g_writing.test_and_set(std::memory_order_acquire)) {
    reread();  // not there (or never read): the process may have mapped it since
    g_read_at.store(now, std::memory_order_relaxed);
    g_writing.clear(std::memory_order_release);
    const int again = look_up(address);
    if (again >= 0) return again == 1;
    return std::nullopt;
  }
  if (answer == 0) return false;
  return std::nullopt;
}

}  // namespace cuaudit::inject
