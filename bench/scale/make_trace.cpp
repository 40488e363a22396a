// Writes a synthetic trace, as the injection would have recorded it, for measuring `cuaudit report`
// at scale without a GPU (issue 13): EVENTS allocation and release events over THREADS threads, of
// which LIVE allocations are still live at exit, made from STACKS distinct call stacks.
//
// Usage: make_trace DIR [EVENTS] [LIVE] [STACKS] [THREADS] [SHAPE] [PID]
//   (defaults 10,000,000 / 1,000,000 / 100,000 / 64 / warmup / 4242). Writes DIR/trace-PID.cutrace.
//
// SHAPE says when the live allocations are made:
//   warmup   all first, then allocate/release pairs fill up the events (a steady program);
//   grow     one every so many pairs, all from one extra stack, over a run of 10 us per event (a
//            service keeping a buffer per request: its live memory climbs to the end);
//   running  as warmup, but the process has not ended: no end record, and the last chunk is cut
//            in the middle, as `cuaudit snapshot` finds the trace of a program still writing it.
// Each thread writes 64 KiB chunks, in sequence order within the thread, as the injection's
// buffers do.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api_table.h"
#include "compact_event.h"
#include "trace_format.h"

namespace {

using namespace cuaudit;
using namespace cuaudit::trace;

constexpr uint64_t kNonce = 0x5ca1e;  // the file's identity (FileIdentity): any number will do

constexpr uint64_t kDefaultPid = 4242;
constexpr uint64_t kModuleStart = 0x400000, kModuleEnd = 0x800000;
constexpr size_t kChunkBytes = 64 * 1024;

class Writer {
 public:
  Writer(FILE* f, size_t threads, uint64_t pid) : f_(f), pid_(pid), buffers_(threads) {}

  template <typename Record>
  void add(size_t thread, Record r, const void* tail = nullptr, size_t tail_bytes = 0) {
    r.header = header_for<Record>(sizeof r + tail_bytes);
    std::string& b = buffers_[thread];
    const size_t padded = r.header.size;
    if (b.size() + padded > kChunkBytes) flush(thread);
    b.append(reinterpret_cast<const char*>(&r), sizeof r);
    if (tail_bytes) b.append(static_cast<const char*>(tail), tail_bytes);
    b.resize(b.size() + (padded - sizeof r - tail_bytes), '\0');
  }

  // An allocation or release as the injection writes it: compact, relative to the thread's last.
  void add_event(size_t thread, bool alloc, const ApiEventRecord& r) {
    uint8_t out[kMaxCompactEventBytes];
    if (buffers_[thread].size() + kMaxCompactEventBytes > kChunkBytes) flush(thread);  // a new chunk starts afresh
    const size_t bytes = encode_compact_event(compact_[thread], alloc, r, out);
    buffers_[thread].append(reinterpret_cast<const char*>(out), bytes);
  }

  void flush(size_t thread) {
    std::string& b = buffers_[thread];
    compact_[thread] = {};
    if (b.empty()) return;
    const auto tid = static_cast<uint32_t>(1000 + thread);
    const ChunkHeader h{kChunkMagic, static_cast<uint32_t>(b.size()), tid,
                        chunk_checksum(b.data(), b.size(), chunk_seal(kTraceVersion, pid_, kNonce, tid))};
    fwrite(&h, sizeof h, 1, f_);
    fwrite(b.data(), 1, b.size(), f_);
    b.clear();
  }

  void flush_all() {
    for (size_t t = 0; t < buffers_.size(); ++t) flush(t);
  }

  // What the injection writes after each chunk once exit began: the file of an ended process ends
  // with it (trace_format.h, TraceClosedRecord).
  void close_mark() {
    const TraceClosedRecord r{header_for<TraceClosedRecord>(sizeof(TraceClosedRecord))};
    const ChunkHeader h{kChunkMagic, sizeof r, 1000,
                        chunk_checksum(&r, sizeof r, chunk_seal(kTraceVersion, pid_, kNonce, 1000))};
    fwrite(&h, sizeof h, 1, f_);
    fwrite(&r, sizeof r, 1, f_);
  }

 private:
  FILE* f_;
  uint64_t pid_;
  std::vector<std::string> buffers_;
  std::vector<CompactEventState> compact_ = std::vector<CompactEventState>(buffers_.size());
};

uint64_t arg(int argc, char** argv, int i, uint64_t fallback) {
  return argc > i ? std::strtoull(argv[i], nullptr, 10) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_trace DIR [EVENTS] [LIVE] [STACKS] [THREADS] [SHAPE] [PID]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const uint64_t events = arg(argc, argv, 2, 10'000'000), live = arg(argc, argv, 3, 1'000'000);
  const uint64_t stacks = std::max<uint64_t>(1, arg(argc, argv, 4, 100'000));
  const size_t threads = std::max<uint64_t>(1, arg(argc, argv, 5, 64));
  const std::string shape = argc > 6 ? argv[6] : "warmup";
  if (shape != "warmup" && shape != "grow" && shape != "running") {
    std::fprintf(stderr, "make_trace: SHAPE is warmup, grow or running, not %s\n", shape.c_str());
    return 2;
  }
  const uint64_t step_ns = shape == "grow" ? 10'000 : 1'000;
  if (live > events) {
    std::fprintf(stderr, "make_trace: LIVE (%llu) cannot exceed EVENTS (%llu)\n", static_cast<unsigned long long>(live),
                 static_cast<unsigned long long>(events));
    return 2;
  }
  const uint64_t pid = arg(argc, argv, 7, kDefaultPid);  // many processes: one trace each
  const std::string path = dir + "/trace-" + std::to_string(pid) + ".cutrace";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "make_trace: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  const FileStart start = file_start(pid, kNonce);
  std::fwrite(&start, sizeof start, 1, f);

  Writer w(f, threads, pid);
  uint64_t seq = 1, now = 1'000'000'000;
  const char cmdline[] = "./service\0";
  ProcessInfoRecord info{};
  info.pid = pid;
  info.parent_pid = 1;
  info.start_monotonic_ns = now;
  info.start_realtime_ns = 1'700'000'000'000'000'000ull;
  info.cmdline_bytes = sizeof cmdline - 1;
  info.flush_interval_ms = 100;
  w.add(0, info, cmdline, sizeof cmdline - 1);
  const char module_path[] = "/opt/service/bin/service";
  ModuleRecord module{};
  module.start = kModuleStart;
  module.end = kModuleEnd;
  module.path_bytes = sizeof module_path - 1;
  w.add(0, module, module_path, module.path_bytes);
  ContextCreatedRecord context{};
  context.seq = seq++;
  context.time_ns = now;
  context.context_uid = 1;
  w.add(0, context);

  // Every stack is written once, by the thread that first uses it (as the injection does per thread).
  std::vector<std::vector<bool>> written(threads, std::vector<bool>(stacks + 1, false));
  auto stack_id = [](uint64_t s) { return 0x5000'0000'0000ull + s; };
  auto use_stack = [&](size_t thread, uint64_t s) {
    if (written[thread][s]) return;
    written[thread][s] = true;
    uint64_t frames[12];
    for (int i = 0; i < 12; ++i) frames[i] = kModuleStart + 0x100 + ((s * 7919 + i * 104729) % 0x3ff000);
    StackRecord r{};
    r.id = stack_id(s);
    r.depth = 12;
    w.add(thread, r, frames, sizeof frames);
  };
  auto event = [&](bool alloc, size_t thread, uint64_t key, uint64_t s) {
    use_stack(thread, s);
    ApiEventRecord r{};
    r.seq = seq++;
    r.time_ns = now += step_ns;
    r.key = key;
    r.bytes = alloc ? 4096 : 0;
    r.stack_id = stack_id(s);
    r.tid = static_cast<uint32_t>(1000 + thread);
    r.context_uid = 1;
    r.device = 0;
    r.api = static_cast<uint16_t>(alloc ? Api::cudaMalloc : Api::cudaFree);
    w.add_event(thread, alloc, r);
  };

  const uint64_t base = 0x7f00'0000'0000ull;
  const bool grow = shape == "grow";
  if (!grow) {
    for (uint64_t i = 0; i < live; ++i) event(true, i % threads, base + i * 4096, i % stacks);
  }
  // Pairs reuse one address per thread, as an allocator handing back the block it just took.
  const uint64_t pairs = (events - live) / 2;
  const uint64_t grow_every = live ? std::max<uint64_t>(1, pairs / live) : 0;
  uint64_t grown = 0;
  for (uint64_t i = 0; i < pairs; ++i) {
    const size_t t = i % threads;
    const uint64_t key = base + (live + t) * 4096;
    const uint64_t s = (i * 31) % stacks;
    event(true, t, key, s);
    event(false, t, key, s);
    if (grow && grown < live && i % grow_every == 0) {
      event(true, t, base + grown * 4096, stacks);  // the extra stack: the one that keeps what it allocates
      ++grown;
    }
  }
  if (shape != "running") {
    ProcessEndRecord end{};
    end.seq = seq++;
    end.time_ns = now;
    w.add(0, end);
  }
  w.flush_all();
  if (shape != "running") w.close_mark();
  long bytes = std::ftell(f);
  std::fclose(f);
  if (shape == "running") {  // the chunk being written when the snapshot reads the file
    bytes -= 100;
    if (truncate(path.c_str(), bytes) != 0) {
      std::fprintf(stderr, "make_trace: cannot cut %s: %s\n", path.c_str(), std::strerror(errno));
      return 1;
    }
  }
  std::printf(
      "make_trace: %s: %llu events (%llu live at exit), %llu stacks, %zu threads, %ld bytes (%.1f bytes per event)\n",
      path.c_str(), static_cast<unsigned long long>(live + 2 * pairs), static_cast<unsigned long long>(live),
      static_cast<unsigned long long>(stacks), threads, bytes,
      static_cast<double>(bytes) / static_cast<double>(live + 2 * pairs));
  return 0;
}
