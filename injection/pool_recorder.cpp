#include "pool_recorder.h"

#include <atomic>
#include <cstring>

#include "call_recorder.h"
#include "cuaudit_pool_api.h"
#include "event_clock.h"
#include "returned_blocks.h"
#include "stack_capture.h"
#include "stack_sampling.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

std::atomic<uint32_t> g_next_pool{1};
std::atomic<DeviceOfPointer> g_device_of{nullptr};

// Each pool's source, for the C entry points (which name their pool by number only): beyond the
// table, a pool's blocks are recorded as CuPy's, the one framework that calls them today.
constexpr uint32_t kKnownPools = 4096;
std::atomic<uint8_t> g_pool_kind[kKnownPools];

Api block_api_of(uint32_t pool, bool handed_out) {
  uint8_t number = pool < kKnownPools ? g_pool_kind[pool].load(std::memory_order_relaxed) : 0;
  if (!is_pool_source(number)) number = static_cast<uint8_t>(MemorySource::CupyPool);
  return block_api(static_cast<MemorySource>(number), handed_out ? BlockOp::HandOut : BlockOp::TakeBack);
}

// The NVTX pools' blocks as the launch checks need them: the size of each block handed out (NVTX
// says only the pointer when a block comes back) and the blocks taken back most recently, where a
// kernel argument must not point. One spin flag guards both; the launch checks take it only once
// a block was returned.
class NvtxBlocks {
 public:
  void handed_out(uint64_t key, uint64_t bytes) noexcept {
    take();
    if (returned_.load(std::memory_order_relaxed)) blocks_.forget(key, key + (bytes ? bytes : 1));  // live again
    remember_size(key, bytes);
    give();
  }

  void returned(uint64_t key) noexcept {
    take();
    const uint64_t bytes = take_size(key);
    blocks_.add(key, key + (bytes ? bytes : 1));
    returned_.store(true, std::memory_order_relaxed);
    give();
  }

  void resized(uint64_t key, uint64_t bytes) noexcept {
    take();
    take_size(key);  // a resize of a block handed out before: its new size replaces the old
    remember_size(key, bytes);
    give();
  }

  // In a forked child, the only thread left: a thread of the parent may have held the flag.
  void reset_after_fork() noexcept { lock_.clear(std::memory_order_release); }

  bool in_returned(uint64_t pointer) noexcept {
    if (!returned_.load(std::memory_order_relaxed)) return false;
    take();
    const bool found = blocks_.contains(pointer);
    give();
    return found;
  }

 private:
  struct Size {
    uint64_t key = 0;  // 0: empty; kGone: a removed entry probes continue past
    uint64_t bytes = 0;
  };
  static constexpr size_t kSizes = size_t{1} << 16;  // blocks live at once whose size is known
  static constexpr uint64_t kGone = UINT64_MAX;

  static size_t slot_of(uint64_t key) noexcept { return ((key >> 4) * 0x9E3779B97F4A7C15ull) >> 48; }

  void take() noexcept {
    while (lock_.test_and_set(std::memory_order_acquire)) {
    }
  }
  void give() noexcept { lock_.clear(std::memory_order_release); }

  // Full: the block's size stays unknown, and its return is remembered as one byte.
  void remember_size(uint64_t key, uint64_t bytes) noexcept {
    for (size_t i = 0, slot = slot_of(key); i < kSizes; ++i, slot = (slot + 1) % kSizes) {
      if (sizes_[slot].key == 0 || sizes_[slot].key == kGone || sizes_[slot].key == key) {
        sizes_[slot] = {key, bytes};
        return;
      }
    }
  }
  uint64_t take_size(uint64_t key) noexcept {
    for (size_t i = 0, slot = slot_of(key); i < kSizes && sizes_[slot].key != 0; ++i, slot = (slot + 1) % kSizes) {
      if (sizes_[slot].key == key) {
        sizes_[slot].key = kGone;
        return sizes_[slot].bytes;
      }
    }
    return 0;
  }

  ReturnedBlocks blocks_;
  Size sizes_[kSizes];
  std::atomic<bool> returned_{false};
  std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
};
NvtxBlocks g_nvtx_blocks;

std::atomic<bool> g_track_for_launches{true};

void track_nvtx_block(Api api, uint64_t key, uint64_t bytes) noexcept {
  if (!g_track_for_launches.load(std::memory_order_relaxed)) return;
  if (api == Api::nvtxMemRegionsRegister) g_nvtx_blocks.handed_out(key, bytes);
  if (api == Api::nvtxMemRegionsUnregister) g_nvtx_blocks.returned(key);
  if (api == Api::nvtxMemRegionsResize) g_nvtx_blocks.resized(key, bytes);
  note_pool_block_change();  // launches found clean before may point into this block
}

}  // namespace

bool in_returned_pool_block(uint64_t pointer) noexcept { return g_nvtx_blocks.in_returned(pointer); }

void reset_pool_state_after_fork() noexcept { g_nvtx_blocks.reset_after_fork(); }

uint32_t register_pool(MemorySource kind, const char* name, uint64_t base, uint64_t bytes, int32_t device,
                       uint64_t stack) noexcept {
  const uint32_t pool = g_next_pool.fetch_add(1, std::memory_order_relaxed);
  if (pool < kKnownPools) g_pool_kind[pool].store(static_cast<uint8_t>(kind), std::memory_order_relaxed);
  trace::PoolRecord r{};
  r.pool = pool;
  r.kind = static_cast<uint32_t>(kind);
  r.base = base;
  r.bytes = bytes;
  r.stack_id = stack;
  r.device = device;
  const size_t name_bytes = name ? strnlen(name, 256) : 0;
  r.name_bytes = static_cast<uint32_t>(name_bytes);
  trace_writer().append_with_tail(r, name, name_bytes);
  // A pool that says which memory it hands blocks out of (an NVTX heap's range): its one segment.
  if (bytes) record_pool_segment(pool, true, base, bytes, device, stack);
  return pool;
}

void record_pool_segment(uint32_t pool, bool mapped, uint64_t base, uint64_t bytes, int32_t device,
                         uint64_t stack) noexcept {
  trace::PoolSegmentRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.base = base;
  r.bytes = bytes;
  r.stack_id = stack;
  r.tid = current_tid();
  r.pool = pool;
  r.device = device;
  r.change = static_cast<uint8_t>(mapped ? trace::SegmentChange::Mapped : trace::SegmentChange::Unmapped);
  trace_writer().append(r);
}

void set_pool_blocks_tracked_for_launches(bool tracked) noexcept {
  g_track_for_launches.store(tracked, std::memory_order_relaxed);
}

uint64_t pool_block_stack(bool handed_out, uint64_t bytes) noexcept {
  const bool walk = handed_out ? take_allocation_stack(bytes) : take_release_stack();
  return walk ? capture_stack() : trace::kNoStack;
}

void record_pool_block(Api api, uint32_t pool, uint64_t key, uint64_t bytes, int32_t device, uint64_t stack) noexcept {
  const ApiInfo& info = api_info(api);
  if (info.op == BlockOp::None) return;  // not a block operation
  track_nvtx_block(api, key, bytes);
  trace::PoolBlockRecord r{};
  r.seq = next_sequence();
  r.time_ns = monotonic_ns();
  r.key = key;
  r.bytes = bytes;
  r.stack_id = stack;
  r.tid = current_tid();
  r.pool = pool;
  r.device = device;
  r.source = static_cast<uint8_t>(info.source);
  r.op = static_cast<uint8_t>(info.op);
  trace_writer().append(r);
  if (info.op == BlockOp::HandOut && (stack != trace::kNoStack || !stacks_sampled())) record_python_stack_of(r.seq);
}

void set_device_of_pointer(DeviceOfPointer lookup) noexcept { g_device_of.store(lookup, std::memory_order_release); }

int32_t device_of_pointer(uint64_t pointer) noexcept {
  const DeviceOfPointer lookup = g_device_of.load(std::memory_order_acquire);
  return lookup && pointer ? lookup(pointer) : trace::kUnknownDevice;
}

}  // namespace cuaudit::inject

// The C entry points a framework's memory hook calls (CuPy's, through ctypes.PyDLL, holding the
// GIL: python/cuaudit_site/cuaudit_hooks_cupy.py), declared once in common/python_contract.inc and
// defined against the header generated from it: a signature changed there and not here fails to
// build. Exported by the injection library.

int32_t cuaudit_memory_source(const char* key) {
  const cuaudit::SourceInfo* source = cuaudit::source_by_key(key);
  return source && cuaudit::is_pool_source(static_cast<uint32_t>(source->source)) ? static_cast<int32_t>(source->source)
                                                                                  : -1;
}

uint32_t cuaudit_pool_register(uint32_t kind, const char* name, int32_t device) {
  using namespace cuaudit;
  if (!trace::is_known_pool_kind(kind)) return 0;
  return inject::register_pool(static_cast<MemorySource>(kind), name, 0, 0, device, inject::capture_stack());
}

void cuaudit_pool_block(uint32_t pool, int32_t handed_out, uint64_t pointer, uint64_t bytes, int32_t device) {
  using namespace cuaudit;
  inject::record_pool_block(inject::block_api_of(pool, handed_out != 0), pool, pointer, bytes, device,
                            inject::pool_block_stack(handed_out != 0, bytes));
}

void cuaudit_pool_segment(uint32_t pool, int32_t mapped, uint64_t pointer, uint64_t bytes, int32_t device) {
  using namespace cuaudit;
  inject::record_pool_segment(pool, mapped != 0, pointer, bytes, device, inject::capture_stack());
}
