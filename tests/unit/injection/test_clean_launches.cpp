// Launches remembered clean by a digest of their arguments and the memory's epochs.
#include "clean_launches.h"

#include <doctest/doctest.h>

#include <initializer_list>

#include "event_clock.h"

using namespace cuaudit::inject;

namespace {

uint64_t digest_of(uint32_t kernel, std::initializer_list<uint64_t> words) {
  uint64_t digest = clean_digest_start(kernel);
  for (uint64_t w : words) digest = clean_digest_add(digest, w);
  return digest;
}

}  // namespace

TEST_CASE("a launch remembered clean is known by its kernel and words until memory changes") {
  const uint64_t digest = digest_of(7, {0x7f0000001000, 42});
  CHECK_FALSE(seen_clean(digest));
  remember_clean(digest);
  CHECK(seen_clean(digest_of(7, {0x7f0000001000, 42})));
  CHECK_FALSE(seen_clean(digest_of(8, {0x7f0000001000, 42})));  // another kernel
  CHECK_FALSE(seen_clean(digest_of(7, {42, 0x7f0000001000})));  // the words in another order
  CHECK_FALSE(seen_clean(digest_of(7, {0x7f0000001000, 43})));
  note_release();  // memory released anywhere: the same words may point at nothing now
  CHECK_FALSE(seen_clean(digest_of(7, {0x7f0000001000, 42})));
  remember_clean(digest_of(7, {0x7f0000001000, 42}));
  note_allocation();
  CHECK_FALSE(seen_clean(digest_of(7, {0x7f0000001000, 42})));
  remember_clean(digest_of(7, {0x7f0000001000, 42}));
  note_pool_block_change();  // a pool's block handed out or taken back
  CHECK_FALSE(seen_clean(digest_of(7, {0x7f0000001000, 42})));
}
