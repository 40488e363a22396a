#include "process_record.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "event_clock.h"
#include "trace_format.h"
#include "trace_writer.h"

namespace cuaudit::inject {

void write_process_info(unsigned flush_interval_ms) noexcept {
  static char cmdline[32768];  // not on the stack: this also runs in a forked child's first event
  size_t cmdline_bytes = 0;
  if (FILE* f = fopen("/proc/self/cmdline", "rb")) {
    cmdline_bytes = fread(cmdline, 1, sizeof cmdline, f);
    fclose(f);
  }
  trace::ProcessInfoRecord r{};
  r.pid = static_cast<uint64_t>(getpid());
  r.parent_pid = static_cast<uint64_t>(getppid());
  r.start_realtime_ns = realtime_ns();
  r.start_monotonic_ns = monotonic_ns();
  r.cmdline_bytes = static_cast<uint32_t>(cmdline_bytes);
  r.flush_interval_ms = flush_interval_ms;
  trace_writer().append_with_tail(r, cmdline, cmdline_bytes);
}

}  // namespace cuaudit::inject
