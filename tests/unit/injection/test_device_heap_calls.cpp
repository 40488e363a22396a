// The recorder's side of --device-heap: a context's buffer (as the patches fill it on the GPU) read
// into DeviceHeapCall records by the real recorder and read back by the real reader.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "device_heap_calls.h"
#include "recorder_trace.h"

using namespace cuaudit;
using namespace cuaudit::device_heap;

namespace {

constexpr uint64_t kLaunch = 0x5150;

struct OwnedBuffer {
  Buffer* buffer;
  explicit OwnedBuffer(uint64_t capacity) : buffer(static_cast<Buffer*>(calloc(1, buffer_bytes(capacity)))) {
    buffer->capacity = capacity;
  }
  ~OwnedBuffer() { ::free(buffer); }
  // What the patch does: reserve a place, fill it, then the word that says it is whole.
  Call* reserve() {
    const uint64_t i = buffer->reserved++;
    return i < buffer->capacity ? &buffer->calls[i] : nullptr;
  }
  void write(uint64_t kind, uint64_t address, uint64_t bytes) {
    if (Call* c = reserve()) *c = {0x7f00000001f0, address, bytes, pack_launch_and_kind(kLaunch, kind)};
  }
};

size_t calls_of_launch(const ProcessTrace& t) {
  return static_cast<size_t>(std::count_if(t.device_heap_calls.begin(), t.device_heap_calls.end(),
                                           [](const DeviceHeapCallFact& c) { return c.launch_id == kLaunch; }));
}

}  // namespace

TEST_CASE("a buffer's whole calls become records, a call not yet written ends the pass until it is") {
  testing::recorder_trace_path();
  OwnedBuffer owned(16);
  inject::DeviceHeapDrain drain(owned.buffer);
  owned.write(kMalloc, 0x1000, 16);
  Call* pending = owned.reserve();  // a thread still inside its patch
  owned.write(kFree, 0x1000, 0);
  drain.drain();
  CHECK(drain.recorded() == 1);
  CHECK(calls_of_launch(testing::read_recorder_trace()) == 1);

  *pending = {0x7f0000000200, 0x2000, 32, pack_launch_and_kind(kLaunch, kMalloc)};
  drain.drain();
  CHECK(drain.recorded() == 3);
  const ProcessTrace t = testing::read_recorder_trace();
  REQUIRE(calls_of_launch(t) == 3);
  const DeviceHeapCallFact& second = t.device_heap_calls[t.device_heap_calls.size() - 2];
  CHECK(second.kind == trace::DeviceHeapCall::Malloc);
  CHECK(second.address == 0x2000);
  CHECK(second.bytes == 32);
  CHECK(t.device_heap_calls.back().kind == trace::DeviceHeapCall::Free);
  CHECK(drain.dropped() == 0);
}

TEST_CASE("calls past the buffer's capacity are counted as dropped, never read") {
  OwnedBuffer owned(4);
  inject::DeviceHeapDrain drain(owned.buffer);
  for (int i = 0; i < 7; ++i) owned.write(kMalloc, 0x9000 + 16 * i, 16);
  drain.drain();
  CHECK(drain.recorded() == 4);
  CHECK(drain.dropped() == 3);
}

TEST_CASE("a launch is written with its name, code range and the heap's size") {
  testing::recorder_trace_path();
  inject::DeviceHeapLaunch launch;
  launch.launch_id = 77;
  launch.function_pc = 0x7f0000000000;
  launch.function_bytes = 0x800;
  launch.heap_bytes = 8 << 20;
  launch.block[0] = 256;
  launch.device = 0;
  launch.name = "_Z10leak_nodesi";
  inject::record_device_heap_launch(launch);
  const ProcessTrace t = testing::read_recorder_trace();
  REQUIRE(t.device_heap_launches.count(77) == 1);
  const DeviceHeapLaunchFact& l = t.device_heap_launches.at(77);
  CHECK(l.name == "_Z10leak_nodesi");
  CHECK(l.function_bytes == 0x800);
  CHECK(l.heap_bytes == 8 << 20);
  CHECK(l.block[0] == 256);
  CHECK(l.stack_id != 0);
}
