// Launches whose arguments the checks found clean, remembered by a digest of the argument words
// they read, so that the same arguments again cost the digest and one lookup (issue 51: a
// PyTorch step launches each kernel on the same tensors step after step; checking every word of
// TensorIterator's offset calculators again cost ~8 µs a launch). A remembered launch holds only
// while nothing was allocated or released and no pool block changed hands since: the digest
// includes those epochs. Lossy and lock-free: a slot another launch took costs one full check.
#pragma once

#include <cstdint>

namespace cuaudit::inject {

// The digest of one launch: start from its kernel and the memory's state now, add each word the
// checks read, in order.
uint64_t clean_digest_start(uint32_t kernel_id) noexcept;
inline uint64_t clean_digest_add(uint64_t digest, uint64_t word) noexcept {
  digest = (digest ^ word) * 0x9e3779b97f4a7c15ull;
  return digest ^ (digest >> 29);
}

// Whether a launch with this digest was found clean (nothing recorded, nothing left unlooked at).
bool seen_clean(uint64_t digest) noexcept;
void remember_clean(uint64_t digest) noexcept;

}  // namespace cuaudit::inject
