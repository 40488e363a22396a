// What the device-heap probe's patches write and its host side reads: one buffer per launch.
#pragma once
#include <cstdint>

constexpr uint32_t kProbeEventCapacity = 1 << 16;
constexpr uint32_t kProbeMalloc = 1;
constexpr uint32_t kProbeFree = 2;

struct ProbeEvent {
  uint32_t kind;
  uint64_t pc;       // the device code address of the malloc or free
  uint64_t address;  // what malloc returned (0: the heap was exhausted), or what free was given
  uint64_t bytes;
};

struct ProbeEvents {
  uint32_t count;
  ProbeEvent events[kProbeEventCapacity];
};
