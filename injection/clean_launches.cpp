#include "clean_launches.h"

#include <atomic>
#include <cstddef>

#include "event_clock.h"

namespace cuaudit::inject {
namespace {

// 16,384 digests (128 KiB): PyTorch's training steps launch a few hundred distinct
// (kernel, arguments) pairs; a direct-mapped table loses a few of them to collisions, never a finding.
constexpr size_t kSlots = 1 << 14;
std::atomic<uint64_t> g_clean[kSlots];

uint64_t finished(uint64_t digest) noexcept {
  digest ^= digest >> 31;
  digest *= 0xff51afd7ed558ccdull;
  return (digest ^ (digest >> 33)) | 1;  // 0 marks an empty slot
}

}  // namespace

uint64_t clean_digest_start(uint32_t kernel_id) noexcept {
  uint64_t digest = clean_digest_add(0x2545f4914f6cdd1dull, kernel_id);
  digest = clean_digest_add(digest, allocation_epoch());
  digest = clean_digest_add(digest, release_epoch());
  return clean_digest_add(digest, pool_block_epoch());
}

bool seen_clean(uint64_t digest) noexcept {
  const uint64_t key = finished(digest);
  return g_clean[key % kSlots].load(std::memory_order_relaxed) == key;
}

void remember_clean(uint64_t digest) noexcept {
  const uint64_t key = finished(digest);
  g_clean[key % kSlots].store(key, std::memory_order_relaxed);
}

}  // namespace cuaudit::inject
