#include "kernel_code.h"

#include "run_dir_layout.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "environment.h"
#include "event_clock.h"
#include "in_target_log.h"
#include "stage_stats.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

std::atomic<uint64_t> g_limit_bytes{0};
std::atomic<uint64_t> g_kept_bytes{0};
std::atomic<bool> g_limit_said{false};

bool write_all(int fd, const unsigned char* data, size_t bytes) noexcept {
  while (bytes > 0) {
    const ssize_t n = write(fd, data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// Writes the cubin as <dir>/kernel-code/<hash>.cubin: through a temporary name, so that a
// process killed while writing leaves no partial cubin for the tool, and a file that is already
// there (another process of the run loaded the same module) is not written again.
trace::ModuleCodeStatus save(const char* dir, uint64_t hash, const void* image, size_t bytes,
                             trace::ModuleCodeStatus saved) noexcept {
  char folder[4200], path[4300], temporary[4400];
  snprintf(folder, sizeof folder, "%s/%s", dir, run_dir::KernelCode.prefix);
  snprintf(path, sizeof path, "%s/%016llx.%s", folder, static_cast<unsigned long long>(hash),
           saved == trace::ModuleCodeStatus::SavedFatbin ? "fatbin" : "cubin");
  if (access(path, F_OK) == 0) return saved;
  if (mkdir(folder, 0700) != 0 && errno != EEXIST) return trace::ModuleCodeStatus::WriteFailed;
  // Our own directory, not a link someone planted to make us write elsewhere.
  struct stat st;
  if (lstat(folder, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
    return trace::ModuleCodeStatus::WriteFailed;
  snprintf(temporary, sizeof temporary, "%s.%ld.tmp", path, static_cast<long>(getpid()));
  // A new file of our own: a file or link someone planted under that name is never written through.
  const int fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return trace::ModuleCodeStatus::WriteFailed;
  const bool written = write_all(fd, static_cast<const unsigned char*>(image), bytes);
  close(fd);
  if (!written || rename(temporary, path) != 0) {
    unlink(temporary);
    return trace::ModuleCodeStatus::WriteFailed;
  }
  return saved;
}

// What kind of code `image` is, and its real size: a fat binary's header says how long it is
// (CUPTI's size may cover more).
trace::ModuleCodeStatus kind_of(const void* image, size_t& bytes) noexcept {
  static constexpr unsigned char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
  if (bytes >= sizeof kElfMagic && memcmp(image, kElfMagic, sizeof kElfMagic) == 0)
    return trace::ModuleCodeStatus::Saved;
  struct {
    uint32_t magic;
    uint16_t version, header_bytes;
    uint64_t payload_bytes;
  } fatbin;
  if (bytes < sizeof fatbin) return trace::ModuleCodeStatus::NotCode;
  memcpy(&fatbin, image, sizeof fatbin);
  if (fatbin.magic != trace::kFatbinMagic || fatbin.header_bytes < sizeof fatbin)
    return trace::ModuleCodeStatus::NotCode;
  if (fatbin.header_bytes + fatbin.payload_bytes < bytes) bytes = fatbin.header_bytes + fatbin.payload_bytes;
  return trace::ModuleCodeStatus::SavedFatbin;
}

}  // namespace

void configure_kernel_code() noexcept {
  uint64_t megabytes = 512;
  if (const char* text = getenv(env_name(EnvVar::KernelCodeLimitMb)); text && *text) {
    char* end = nullptr;
    const unsigned long long value = strtoull(text, &end, 10);
    if (end && *end == '\0') {
      megabytes = value;
    } else {
      log_warning("CUAUDIT_KERNEL_CODE_LIMIT_MB=%s is not a number of MiB; keeping up to 512 MiB", text);
    }
  }
  g_limit_bytes.store(megabytes << 20, std::memory_order_relaxed);
}

bool keeping_kernel_code() noexcept { return g_limit_bytes.load(std::memory_order_relaxed) > 0; }

void on_module_loaded(uint32_t module_id, const void* image, size_t bytes) noexcept {
  if (!keeping_kernel_code() || !image || bytes == 0) return;
  trace::ModuleCodeRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.module_id = module_id;
  const trace::ModuleCodeStatus kind = kind_of(image, bytes);
  r.bytes = bytes;
  if (kind == trace::ModuleCodeStatus::NotCode) {
    r.status = static_cast<uint32_t>(kind);
    if (g_stage_stats) {
      const auto* b = static_cast<const unsigned char*>(image);
      log_info("module %u: %zu bytes of unknown code (%02x %02x %02x %02x ...)", module_id, bytes, b[0],
               bytes > 1 ? b[1] : 0, bytes > 2 ? b[2] : 0, bytes > 3 ? b[3] : 0);
    }
  } else if (g_kept_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes >
             g_limit_bytes.load(std::memory_order_relaxed)) {
    g_kept_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    r.status = static_cast<uint32_t>(trace::ModuleCodeStatus::OverLimit);
    if (!g_limit_said.exchange(true))
      log_warning("CUAUDIT_KERNEL_CODE_LIMIT_MB reached: the code of later modules is not kept");
  } else {
    r.hash = trace::content_hash64(image, bytes);
    r.status = static_cast<uint32_t>(save(trace_writer().directory(), r.hash, image, bytes, kind));
  }
  trace_writer().append(r);
}

}  // namespace cuaudit::inject
