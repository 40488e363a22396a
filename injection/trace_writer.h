// Per-thread trace buffers appended to one file per process.
//
// Each thread appends records to a buffer of its own (an uncontended spin flag, no shared lock);
// a full buffer is written as one chunk with one writev(2) on an O_APPEND descriptor. A flusher
// thread writes every buffer out periodically, so a process that dies abruptly loses at most
// the last flush interval. Everything here is immortal: callbacks keep arriving after atexit
// handlers and static destructors have run.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "event_clock.h"  // monotonic_ns, realtime_ns, current_tid: the recorders take them with the writer
#include "trace_format.h"

namespace cuaudit::inject {

class TraceWriter {
 public:
  // Creates `dir`/trace-<pid>.cutrace and writes the file header. On failure returns false
  // with a reason in `error`; the writer then stays disabled and appends are dropped.
  bool open(const char* dir, char* error, size_t error_bytes) noexcept;

  // Appends one record to the calling thread's buffer; its header is set from its type
  // (trace_records.inc), so callers fill in only the fields.
  template <typename Record>
  void append(Record record) noexcept {
    record.header = trace::header_for<Record>(sizeof record);
    append_bytes(&record, sizeof record);
  }

  // Appends a record followed by `tail_bytes` of variable data (a path, a name, frames): the
  // header's size covers the padded total. `tail` is cut to fit the largest record.
  template <typename Record>
  void append_with_tail(Record record, const void* tail, size_t tail_bytes) noexcept {
    record.header = trace::header_for<Record>(sizeof record);
    append_with_tail_bytes(&record, sizeof record, tail, tail_bytes);
  }

  // Appends an allocation (`alloc`) or release, as a compact event relative to the thread's
  // previous one (compact_event.h), or as a full record where it cannot be said that way.
  void append_memory_event(bool alloc, const trace::ApiEventRecord& r) noexcept;

  // Writes every thread's buffer to the file.
  void flush_all() noexcept;

  // From now on each append is written at once: used while the process exits, when no flusher
  // thread or thread-exit hook may run again.
  void set_write_through() noexcept;

  // After a signal the program survived (its own handler returned): back to buffered writing, as
  // before the signal.
  bool write_through_on() const noexcept;
  void set_write_through_off() noexcept;

  // Where the calling thread may have been interrupted inside an append (a signal handler, or an
  // _exit called from one): writes `record` (if any) and every buffer that can be taken without
  // waiting, since waiting for a buffer this very thread holds would hang; then switches to
  // write-through. The record goes first, as a chunk of its own. Async-signal-safe.
  template <typename Record>
  void flush_without_waiting(Record record) noexcept {
    record.header = trace::header_for<Record>(sizeof record);
    flush_without_waiting_bytes(&record, sizeof record);
  }

  // Starts the periodic flusher (interval_ms > 0).
  void start_flusher(unsigned interval_ms) noexcept;

  // Stops all writing (a forked child in application-only mode).
  void disable() noexcept;

  // In a forked child (the only thread left): forgets the parent's buffers and file. This
  // process's own trace is created in the same directory at its first event, and `on_open` then
  // writes what a trace starts with. A child that execs before any event leaves no trace behind.
  void restart_in_child(void (*on_open)()) noexcept;

  bool enabled() const noexcept;
  const char* path() const noexcept;
  const char* directory() const noexcept;  // where the trace is (and what is kept beside it)
  uint64_t dropped_records() const noexcept;

 private:
  void append_bytes(const void* record, size_t bytes) noexcept;
  void append_with_tail_bytes(const void* record, size_t record_bytes, const void* tail, size_t tail_bytes) noexcept;
  void flush_without_waiting_bytes(const void* record, size_t bytes) noexcept;
};

// The process's one writer; never destroyed.
TraceWriter& trace_writer() noexcept;

// Whether the writer records (trace_writer().enabled()), in one load: every CUPTI callback asks it
// first. At namespace scope (constant-initialized, never destroyed), not in the writer's state.
extern std::atomic<bool> g_trace_enabled;
inline bool trace_enabled() noexcept { return g_trace_enabled.load(std::memory_order_relaxed); }

#ifdef CUAUDIT_TEST_HOOKS
// Tests only (the cuaudit_recorder_test_hooks build): `hook` runs once, inside the next append,
// with the thread's buffer held and the record half copied, as a signal arriving there would.
void set_inside_append_hook(void (*hook)()) noexcept;
#endif

}  // namespace cuaudit::inject
