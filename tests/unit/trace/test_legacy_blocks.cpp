// Pre-version-5 traces: their block pseudo-APIs map to today's block APIs, nothing else does.
#include <doctest/doctest.h>

#include "legacy_blocks.h"

using namespace cuaudit;

TEST_CASE("the pseudo-API ids of blocks in traces before version 5 map to the block APIs, in order") {
  CHECK(legacy_block_api(115) == Api::nvtxMemRegionsRegister);
  CHECK(legacy_block_api(120) == Api::cupyPoolMalloc);
  CHECK(legacy_block_api(123) == Api::torchBlockFree);
  CHECK(legacy_block_api(124) == Api::Count);
  CHECK(legacy_block_api(114) == Api::Count);
  CHECK(legacy_block_api(0) == Api::Count);
}
