// Readable addresses from the process's mappings (/proc/self/maps), as the launch checks ask.
#include "readable_mappings.h"

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "readable_memory.h"

using namespace cuaudit::inject;

TEST_CASE("the mappings say which addresses are readable, and learn of new ones once they are re-read") {
  int on_stack = 0;
  const auto address = [](const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); };
  const std::optional<bool> stack = in_readable_mapping(address(&on_stack));
  REQUIRE(stack);
  CHECK(*stack);
  CHECK(in_readable_mapping(0x100000001ull) == std::optional<bool>(false));  // two int32s, not an address
  // Reserved without access, as CUDA reserves device address space: mapped, not readable.
  void* reserved = mmap(nullptr, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(reserved != MAP_FAILED);
  void* fresh = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(fresh != MAP_FAILED);
  // Past the wait between re-reads: 10 ms, or 100 times the last re-read's time (a few ms here).
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  CHECK(in_readable_mapping(address(fresh)) == std::optional<bool>(true));
  CHECK(in_readable_mapping(address(reserved)) == std::optional<bool>(false));
  CHECK(readable_memory_cached(address(fresh)) == readable_memory(address(fresh)));
  CHECK(readable_memory_cached(address(reserved)) == readable_memory(address(reserved)));
  munmap(reserved, 1 << 20);
  munmap(fresh, 4096);
}
