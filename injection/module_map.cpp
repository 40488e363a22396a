#include "module_map.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>

#include "trace_format.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

constexpr size_t kMaxModules = 4096;

struct KnownRange {
  uint64_t start;
  uint64_t end;
};

struct ModuleTable {
  std::mutex scan_mutex;  // only taken to rescan; lookups read the published prefix lock-free
  std::atomic<size_t> count{0};
  KnownRange ranges[kMaxModules];
};

ModuleTable& table() noexcept {
  static ModuleTable* t = new ModuleTable();  // immortal
  return *t;
}

bool is_known(uint64_t pc) noexcept {
  ModuleTable& t = table();
  const size_t n = t.count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    if (pc >= t.ranges[i].start && pc < t.ranges[i].end) return true;
  }
  return false;
}

size_t read_build_id(const dl_phdr_info* info, uint8_t* out, size_t capacity) noexcept {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      memcpy(&note, p, sizeof note);
      const unsigned char* name = p + sizeof note;
      const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
      if (desc + note.n_descsz > end) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        const size_t n = std::min<size_t>(note.n_descsz, capacity);
        memcpy(out, desc, n);
        return n;
      }
      p = desc + ((note.n_descsz + 3) & ~3u);
    }
  }
  return 0;
}

// Called with scan_mutex held.
int record_one(dl_phdr_info* info, size_t, void*) noexcept {
  ModuleTable& t = table();
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    lo = std::min<uint64_t>(lo, info->dlpi_addr + ph.p_vaddr);
    hi = std::max<uint64_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (lo >= hi) return 0;
  const size_t n = t.count.load(std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) {
    if (t.ranges[i].start == lo && t.ranges[i].end == hi) return 0;  // already recorded
  }
  if (n == kMaxModules) return 0;

  char path[4096];
  const char* name = info->dlpi_name;
  if (!name || !*name) {
    // The main program has no name here; the kernel knows its file.
    ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
    if (len <= 0) return 0;
    path[len] = '\0';
    name = path;
  } else if (name[0] != '/') {
    if (strncmp(name, "linux-vdso", 10) == 0 || strncmp(name, "linux-gate", 10) == 0) return 0;
  }

  trace::ModuleRecord r{};
  const size_t path_bytes = std::min<size_t>(strlen(name), 4096);
  r.load_bias = info->dlpi_addr;
  r.start = lo;
  r.end = hi;
  r.build_id_bytes = static_cast<uint16_t>(read_build_id(info, r.build_id, sizeof r.build_id));
  r.path_bytes = static_cast<uint16_t>(path_bytes);
  trace_writer().append_with_tail(r, name, path_bytes);

  t.ranges[n] = {lo, hi};
  t.count.store(n + 1, std::memory_order_release);
  return 0;
}

}  // namespace

void record_loaded_modules() noexcept {
  ModuleTable& t = table();
  std::lock_guard<std::mutex> guard(t.scan_mutex);
  dl_iterate_phdr(record_one, nullptr);
}

void forget_recorded_modules() noexcept {
  ModuleTable& t = table();
  // In a forked child: a parent thread that held the scan lock at the fork does not exist here, so
  // the lock would stay taken for ever; the child's table starts over with a fresh one.
  new (&t.scan_mutex) std::mutex();
  t.count.store(0, std::memory_order_release);
}

void ensure_modules_recorded(const uint64_t* frames, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) {
    if (!is_known(frames[i])) {
      record_loaded_modules();
      return;
    }
  }
}

}  // namespace cuaudit::inject
