#include "trace_writer.h"

#include "chunk_write.h"

#include "run_dir_layout.h"

#include <fcntl.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "background_thread.h"
#include "compact_event.h"
#include "in_target_log.h"
#include "trace_format.h"

namespace cuaudit::inject {

std::atomic<bool> g_trace_enabled{false};
namespace {

constexpr size_t kBufferBytes = 64 * 1024;

enum : int { kNothingPending = 0, kTracePending = 1, kSetupPending = 2 };

struct ThreadBuffer {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;  // owner appends / anyone flushes while holding it
  std::atomic<bool> owned{true};
  uint32_t tid = 0;
  uint32_t used = 0;
  // Bytes at the front already written by a flush that interrupted this buffer's own append (a
  // signal handler on the owning thread): the append goes on at `used`, so `used` must not move.
  uint32_t written = 0;
  ThreadBuffer* next = nullptr;      // registry link; buffers are reused, never freed
  trace::CompactEventState compact;  // the last allocation or release in this chunk
  alignas(8) unsigned char data[kBufferBytes];
};

struct WriterState {
  std::atomic<int> fd{-1};
  std::atomic<bool> write_through{false};
  std::atomic<ThreadBuffer*> buffers{nullptr};
  std::atomic<uint64_t> dropped{0};
  std::atomic<bool> write_error_reported{false};
  // A forked child's trace is created at its first event. From a signal handler only the file is
  // created (async-signal-safe); the flusher and the child's description follow at the next
  // event outside a handler.
  std::atomic<int> open_pending{kNothingPending};
  void (*on_open)() = nullptr;
  unsigned flush_interval_ms = 0;
  // The open file's pid and nonce (its FileIdentity), which every chunk's checksum covers.
  uint64_t pid = 0, nonce = 0;
  char dir[4096] = {};
  char path[4096] = {};
};

WriterState& state() noexcept {
  static WriterState* s = new WriterState();  // immortal
  return *s;
}

void open_pending_trace(bool in_signal_handler) noexcept;

// What the checksum of a chunk of thread `tid` covers besides its payload (trace::chunk_seal). The
// pid and nonce are set before the descriptor is published, and read after it is loaded.
uint64_t seal_of(uint32_t tid) noexcept {
  const WriterState& s = state();
  return trace::chunk_seal(trace::kTraceVersion, s.pid, s.nonce, tid);
}

#ifdef CUAUDIT_TEST_HOOKS
void (*g_inside_append_hook)() = nullptr;
#endif

void lock(ThreadBuffer* b) noexcept {
  for (unsigned spins = 0; b->busy.test_and_set(std::memory_order_acquire); ++spins) {
    if (spins > 64) sched_yield();
  }
}
void unlock(ThreadBuffer* b) noexcept { b->busy.clear(std::memory_order_release); }
// Once exit processing began every chunk is followed by the closing mark (chunk_write.h).
bool closing() noexcept { return state().write_through.load(std::memory_order_relaxed); }

// Writes what the buffer holds past `written` as one chunk. The caller holds b->busy, or is the
// owning thread in a handler that interrupted the owner's append (`keep_used`): that append
// resumes at `used`, so only `written` moves. The bytes are claimed before the write, so a handler
// that interrupts this very write does not write them again.
void write_chunk(ThreadBuffer* b, bool keep_used = false) noexcept {
  WriterState& s = state();
  const uint32_t from = b->written;
  const uint32_t bytes = b->used - from;
  b->written = b->used;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const int fd = s.fd.load(std::memory_order_acquire);
  if (bytes != 0 && fd >= 0 && trace_enabled()) {
    size_t total = 0;
    const ssize_t written = write_chunk_bytes(fd, b->data + from, bytes, b->tid, seal_of(b->tid), closing(), total);
    if (written != static_cast<ssize_t>(total)) {
      s.dropped.fetch_add(1, std::memory_order_relaxed);
      if (!s.write_error_reported.exchange(true)) {
        log_warning("cannot write the trace %s (%s); this process's report will be incomplete", s.path,
                    written < 0 ? strerror(errno) : "short write");
      }
    }
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (!keep_used) {
    b->used = 0;
    b->written = 0;
    b->compact = {};  // the next chunk decodes on its own
  }
}

ThreadBuffer* acquire_buffer(uint32_t tid) noexcept {
  WriterState& s = state();
  for (ThreadBuffer* b = s.buffers.load(std::memory_order_acquire); b; b = b->next) {
    bool expected = false;
    if (!b->owned.load(std::memory_order_relaxed) &&
        b->owned.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      lock(b);
      b->tid = tid;
      unlock(b);
      return b;
    }
  }
  auto* b = new (std::nothrow) ThreadBuffer();
  if (!b) return nullptr;
  b->tid = tid;
  ThreadBuffer* head = s.buffers.load(std::memory_order_relaxed);
  do {
    b->next = head;
  } while (!s.buffers.compare_exchange_weak(head, b, std::memory_order_release, std::memory_order_relaxed));
  return b;
}

// The calling thread's buffer. A plain pointer: a thread_local object with a destructor would be
// destroyed at exit() before the static destructors whose CUDA calls must still be recorded.
thread_local ThreadBuffer* tls_buffer = nullptr;
// Set while this thread holds its own buffer: a signal handler (or an exit() called from one) that
// interrupted the append must not wait for the buffer its own thread holds.
thread_local bool tls_appending = false;

// Runs when a thread other than the main one ends (pthread key destructors do not run at exit()):
// writes its buffer out and hands the buffer to the next thread that needs one.
void release_thread_buffer(void* value) noexcept {
  auto* b = static_cast<ThreadBuffer*>(value);
  lock(b);
  write_chunk(b);
  unlock(b);
  b->owned.store(false, std::memory_order_release);
  tls_buffer = nullptr;
}

pthread_key_t thread_exit_key() noexcept {
  static pthread_key_t key = [] {
    pthread_key_t k;
    pthread_key_create(&k, release_thread_buffer);
    return k;
  }();
  return key;
}

ThreadBuffer* my_buffer() noexcept {
  if (!tls_buffer) {
    tls_buffer = acquire_buffer(current_tid());
    if (tls_buffer) pthread_setspecific(thread_exit_key(), tls_buffer);
  }
  return tls_buffer;
}

void* flusher_main(void*) {
  const unsigned ms = state().flush_interval_ms;
  const timespec interval{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
  for (;;) {
    timespec left = interval;
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    if (!trace_enabled()) continue;
    trace_writer().flush_all();
  }
  return nullptr;
}

}  // namespace

TraceWriter& trace_writer() noexcept {
  static TraceWriter* w = new TraceWriter();  // immortal
  return *w;
}

bool TraceWriter::open(const char* dir, char* error, size_t error_bytes) noexcept {
  WriterState& s = state();
  if (dir != s.dir) snprintf(s.dir, sizeof s.dir, "%s", dir);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    snprintf(error, error_bytes, "cannot create trace directory %s: %s", dir, strerror(errno));
    return false;
  }
  const uint64_t pid = static_cast<uint64_t>(getpid());
  const uint64_t nonce = draw_file_nonce();
  const int fd = create_trace_file(dir, pid, nonce, s.path, sizeof s.path, error, error_bytes);
  if (fd < 0) return false;
  s.pid = pid;
  s.nonce = nonce;
  s.fd.store(fd, std::memory_order_release);
  g_trace_enabled.store(true, std::memory_order_release);
  return true;
}

namespace {
// One record as a chunk of its own, written at once without any buffer: for a thread that already
// holds its buffer (it was interrupted inside an append). Async-signal-safe.
void write_record_alone(const void* head, size_t head_bytes, const void* tail, size_t tail_bytes,
                        size_t bytes) noexcept {
  WriterState& s = state();
  const int fd = s.fd.load(std::memory_order_acquire);
  // Small on purpose: this may run on a signal handler's alternate stack. The records written this
  // way (an exit call, a libc release, a stack) are far smaller; a larger one is counted as dropped.
  alignas(8) unsigned char record[1024];
  if (fd < 0 || bytes > sizeof record) {
    s.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  memcpy(record, head, head_bytes);
  if (tail_bytes) memcpy(record + head_bytes, tail, tail_bytes);
  memset(record + head_bytes + tail_bytes, 0, bytes - head_bytes - tail_bytes);
  size_t total = 0;
  const uint32_t tid = current_tid_signal_safe();
  (void)write_chunk_bytes(fd, record, static_cast<uint32_t>(bytes), tid, seal_of(tid), closing(), total);
}

// Holds the calling thread's buffer with room for `max_bytes` and lets `fill(out, buffer)` write
// one record there, returning its size. Everything that can go wrong before (no trace, no buffer,
// a handler that interrupted this thread's own append) is handled here; `alone` writes the record
// without the buffer in that last case.
template <typename Fill, typename Alone>
void append_record(size_t max_bytes, Fill fill, Alone alone) noexcept {
  WriterState& s = state();
  if (s.open_pending.load(std::memory_order_acquire) != kNothingPending) open_pending_trace(false);
  if (!trace_enabled()) return;
  if (max_bytes > kBufferBytes || max_bytes > trace::kMaxRecordBytes) {
    s.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ThreadBuffer* b = my_buffer();
  if (!b) {
    s.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (tls_appending) {  // re-entered from a handler that interrupted this thread's append
    alone();
    return;
  }
  lock(b);
  tls_appending = true;
  if (b->used + max_bytes > kBufferBytes) write_chunk(b);
  const size_t bytes = fill(b->data + b->used, b);
#ifdef CUAUDIT_TEST_HOOKS
  if (auto hook = g_inside_append_hook) {  // a signal arriving here, with the record half done
    g_inside_append_hook = nullptr;
    hook();
  }
#endif
  std::atomic_signal_fence(std::memory_order_release);  // a handler flushing up to `used` sees whole records
  b->used += static_cast<uint32_t>(bytes);
  if (s.write_through.load(std::memory_order_relaxed)) write_chunk(b);
  tls_appending = false;
  unlock(b);
}

// Copies `head` then `tail` then zero padding (up to `bytes` in all) into the calling thread's
// buffer, as one record.
void append_parts(const void* head, size_t head_bytes, const void* tail, size_t tail_bytes, size_t bytes) noexcept {
  append_record(
      bytes,
      [&](unsigned char* out, ThreadBuffer*) {
        memcpy(out, head, head_bytes);
        if (tail_bytes) memcpy(out + head_bytes, tail, tail_bytes);
        memset(out + head_bytes + tail_bytes, 0, bytes - head_bytes - tail_bytes);
        return bytes;
      },
      [&] { write_record_alone(head, head_bytes, tail, tail_bytes, bytes); });
}
}  // namespace

void TraceWriter::append_memory_event(bool alloc, const trace::ApiEventRecord& r) noexcept {
  auto full = [&](unsigned char* out) {
    trace::RecordHeader header =
        alloc ? trace::header_for<trace::AllocRecord>(sizeof r) : trace::header_for<trace::FreeRecord>(sizeof r);
    memcpy(out, &r, sizeof r);
    memcpy(out, &header, sizeof header);
    return sizeof r;
  };
  append_record(
      std::max(trace::kMaxCompactEventBytes, sizeof r),
      [&](unsigned char* out, ThreadBuffer* b) {
        const size_t bytes = r.tid == b->tid ? trace::encode_compact_event(b->compact, alloc, r, out) : 0;
        return bytes ? bytes : full(out);
      },
      [&] {
        alignas(8) unsigned char record[sizeof r];
        full(record);
        write_record_alone(record, sizeof r, nullptr, 0, sizeof r);
      });
}

void TraceWriter::append_bytes(const void* record, size_t bytes) noexcept {
  append_parts(record, bytes, nullptr, 0, bytes);
}

void TraceWriter::append_with_tail_bytes(const void* record, size_t record_bytes, const void* tail,
                                         size_t tail_bytes) noexcept {
  alignas(8) unsigned char head[128];  // the fixed part of every record is far smaller
  if (record_bytes > sizeof head || record_bytes > trace::kMaxRecordBytes) return;
  if (tail_bytes > trace::kMaxRecordBytes - record_bytes) tail_bytes = trace::kMaxRecordBytes - record_bytes;
  const size_t bytes = trace::padded_record_size(record_bytes + tail_bytes);
  memcpy(head, record, record_bytes);
  trace::RecordHeader header;
  memcpy(&header, head, sizeof header);
  header.size = static_cast<uint16_t>(bytes);
  memcpy(head, &header, sizeof header);
  append_parts(head, record_bytes, tail, tail_bytes, bytes);
}

void TraceWriter::flush_all() noexcept {
  for (ThreadBuffer* b = state().buffers.load(std::memory_order_acquire); b; b = b->next) {
    if (b == tls_buffer && tls_appending) {
      // Held by this very thread, interrupted inside an append (exit() or free() from a signal
      // handler): what it holds up to `used` is whole; waiting would never end.
      write_chunk(b, /*keep_used=*/true);
      continue;
    }
    lock(b);
    write_chunk(b);
    unlock(b);
  }
}

void TraceWriter::flush_without_waiting_bytes(const void* record, size_t bytes) noexcept {
  WriterState& s = state();
  // A forked child ending before its first event (a fork that only _exits) still gets its trace.
  if (s.open_pending.load(std::memory_order_acquire) == kTracePending) open_pending_trace(true);
  if (!trace_enabled()) return;
  s.write_through.store(true, std::memory_order_relaxed);
  const int fd = s.fd.load(std::memory_order_acquire);
  if (fd >= 0 && record) {
    size_t total = 0;
    const uint32_t tid = current_tid_signal_safe();
    (void)write_chunk_bytes(fd, record, static_cast<uint32_t>(bytes), tid, seal_of(tid), closing(), total);
  }
  for (ThreadBuffer* b = s.buffers.load(std::memory_order_acquire); b; b = b->next) {
    bool taken = false;
    for (int attempt = 0; attempt < 1000 && !(taken = !b->busy.test_and_set(std::memory_order_acquire)); ++attempt) {
    }
    if (!taken) continue;
    write_chunk(b);
    unlock(b);
  }
}

void TraceWriter::set_write_through() noexcept {
  state().write_through.store(true, std::memory_order_relaxed);
  flush_all();
}

void TraceWriter::start_flusher(unsigned interval_ms) noexcept {
  if (interval_ms == 0) return;
  state().flush_interval_ms = interval_ms;
  if (!start_background_thread(flusher_main)) {
    log_warning("cannot start the trace flusher thread; a crash may lose more of the trace");
  }
}

bool TraceWriter::write_through_on() const noexcept { return state().write_through.load(std::memory_order_relaxed); }

void TraceWriter::set_write_through_off() noexcept { state().write_through.store(false, std::memory_order_relaxed); }

void TraceWriter::restart_in_child(void (*on_open)()) noexcept {
  WriterState& s = state();
  const int old = s.fd.exchange(-1);
  if (old >= 0) ::close(old);
  // Threads that held a buffer in the parent do not exist here: their buffers (and any flag they
  // held at the moment of fork) are free, and what they held is the parent's to write.
  for (ThreadBuffer* b = s.buffers.load(std::memory_order_acquire); b; b = b->next) {
    b->used = 0;
    b->written = 0;
    b->busy.clear(std::memory_order_release);
    if (b != tls_buffer) b->owned.store(false, std::memory_order_release);
  }
  forget_current_tid();
  if (tls_buffer) tls_buffer->tid = current_tid();
  s.write_through.store(false, std::memory_order_relaxed);
  s.on_open = on_open;
  s.open_pending.store(kTracePending, std::memory_order_release);
}

namespace {
// The first event of a forked child creates its trace. In a signal handler (a crash, or an _exit
// from the program's handler) only the file: open() and write() are async-signal-safe, starting a
// thread and describing the process (which allocates) are not; they wait for the next event
// outside a handler, if the process lives on.
void open_pending_trace(bool in_signal_handler) noexcept {
  WriterState& s = state();
  int pending = s.open_pending.load(std::memory_order_acquire);
  if (pending == kTracePending) {
    if (!s.open_pending.compare_exchange_strong(pending, in_signal_handler ? kSetupPending : kNothingPending,
                                                std::memory_order_acq_rel))
      return;
    char error[512];
    if (!trace_writer().open(s.dir, error, sizeof error)) {
      s.open_pending.store(kNothingPending, std::memory_order_release);
      if (!in_signal_handler) log_error("%s; this forked process is not tracked", error);
      return;
    }
    if (in_signal_handler) return;
  } else if (pending != kSetupPending || in_signal_handler ||
             !s.open_pending.compare_exchange_strong(pending, kNothingPending, std::memory_order_acq_rel)) {
    return;
  }
  if (s.flush_interval_ms) trace_writer().start_flusher(s.flush_interval_ms);  // the parent's stayed there
  if (s.on_open) s.on_open();
}
}  // namespace

#ifdef CUAUDIT_TEST_HOOKS
void set_inside_append_hook(void (*hook)()) noexcept { g_inside_append_hook = hook; }
#endif

void TraceWriter::disable() noexcept { g_trace_enabled.store(false, std::memory_order_relaxed); }

bool TraceWriter::enabled() const noexcept { return trace_enabled(); }

const char* TraceWriter::path() const noexcept { return state().path; }

const char* TraceWriter::directory() const noexcept { return state().dir; }

uint64_t TraceWriter::dropped_records() const noexcept { return state().dropped.load(std::memory_order_relaxed); }

}  // namespace cuaudit::inject
