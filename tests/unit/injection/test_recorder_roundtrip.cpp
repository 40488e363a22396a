// The real recorder (injection side, CUPTI-free part) writes a trace; the real reader reads it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "call_recorder.h"
#include "frame_filter.h"
#include "kernel_code.h"
#include "launch_recorder.h"
#include "pool_recorder.h"
#include "recorder_trace.h"
#include "replay.h"
#include "stack_resolver.h"
#include "symbolizer.h"
#include "trace_reader.h"
#include "trace_writer.h"

using namespace cuaudit;

namespace {

// The writer is process-wide and opened once; each test uses keys of its own and reads back
// only the events with those keys.
const std::string& trace_path() { return testing::recorder_trace_path(); }

ProcessTrace read_back() { return testing::read_recorder_trace(); }

std::vector<Event> events_with_key_in(const ProcessTrace& t, uint64_t lo, uint64_t hi) {
  std::vector<Event> out;
  for (const Event& e : t.events) {
    if (e.is_memory() && e.memory().key >= lo && e.memory().key < hi) out.push_back(e);
  }
  return out;
}

void call(Api api, uint64_t key, uint64_t bytes, int32_t result = 0) {
  trace_path();
  inject::on_call_enter(api);
  inject::on_call_exit({api, key, bytes, result, 1, 0});
}

// A named function the stack must show, as a user's allocation site would.
__attribute__((noinline)) void allocate_from_user_code(uint64_t key) {
  call(Api::cudaMalloc, key, 4096);
  asm volatile("" ::: "memory");  // keep the call from becoming a tail call
}

}  // namespace

TEST_CASE("a runtime call with its nested driver call is one allocation, named by the runtime API") {
  trace_path();
  inject::on_call_enter(Api::cudaMalloc);
  inject::on_call_enter(Api::cuMemAlloc);
  inject::on_call_exit({Api::cuMemAlloc, 0x10000, 256, 0, 1, 0});
  inject::on_call_exit({Api::cudaMalloc, 0x10000, 256, 0, 1, 0});

  const auto events = events_with_key_in(read_back(), 0x10000, 0x10001);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == EventKind::Alloc);
  CHECK(events[0].memory().api == Api::cudaMalloc);
  CHECK(events[0].memory().bytes == 256);
  CHECK(events[0].memory().device == 0);
  CHECK(events[0].tid == static_cast<uint32_t>(gettid()));
}

TEST_CASE("a driver call made by the program itself is recorded as the driver API") {
  call(Api::cuMemAlloc, 0x20000, 512);
  call(Api::cuMemFree, 0x20000, 0);
  const auto events = events_with_key_in(read_back(), 0x20000, 0x20001);
  REQUIRE(events.size() == 2);
  CHECK(events[0].memory().api == Api::cuMemAlloc);
  CHECK(events[1].memory().api == Api::cuMemFree);
  CHECK(events[0].seq < events[1].seq);
}

TEST_CASE("an exit whose enter came before cuaudit subscribed is still recorded at the top level") {
  trace_path();
  inject::on_call_exit({Api::cudaMalloc, 0x30000, 64, 0, 1, 0});
  // ... but not when it is nested inside a tracked call.
  inject::on_call_enter(Api::cudaMallocHost);
  inject::on_call_exit({Api::cuMemHostAlloc, 0x30008, 64, 0, 1, 0});
  inject::on_call_exit({Api::cudaMallocHost, 0x30010, 64, 0, 1, 0});
  const auto events = events_with_key_in(read_back(), 0x30000, 0x30020);
  REQUIRE(events.size() == 2);
  CHECK(events[0].memory().api == Api::cudaMalloc);
  CHECK(events[1].memory().api == Api::cudaMallocHost);
  CHECK(events[1].memory().device == -1);  // host memory
}

TEST_CASE("a call captured into a graph records nothing of its own, an import records its handle") {
  trace_path();
  inject::on_call_enter(Api::cudaMallocAsync);
  inject::on_call_enter(Api::cuMemAllocAsync);
  CHECK_FALSE(inject::is_outermost_exit(Api::cuMemAllocAsync));
  inject::on_call_exit({Api::cuMemAllocAsync, 0x38000, 64, 0, 1, 0});
  CHECK(inject::is_outermost_exit(Api::cudaMallocAsync));
  inject::ApiCall captured{Api::cudaMallocAsync, 0x38000, 64, 0, 1, 0};
  captured.captured = true;  // what the seam sets when the stream was being captured
  inject::on_call_exit(captured);
  CHECK(inject::is_outermost_exit(Api::cudaMalloc));  // nothing left active
  inject::ApiCall open{Api::cudaIpcOpenMemHandle, 0x38100, 4096, 0, 1, 0};
  open.handle_hash = 0xfeed;
  inject::on_call_enter(open.api);
  inject::on_call_exit(open);
  const ProcessTrace t = read_back();
  const auto events = events_with_key_in(t, 0x38000, 0x38200);
  REQUIRE(events.size() == 1);
  CHECK(events[0].memory().api == Api::cudaIpcOpenMemHandle);
  const auto import = std::find_if(t.shared_memory.begin(), t.shared_memory.end(),
                                   [](const SharedMemoryFact& s) { return s.handle_hash == 0xfeed; });
  REQUIRE(import != t.shared_memory.end());
  CHECK(import->seq == events[0].seq);
  CHECK(import->pointer == 0x38100);
  CHECK(import->role == trace::SharedRole::Import);
}

TEST_CASE("a release is ordered before an allocation that reuses its address on another thread") {
  call(Api::cudaMalloc, 0x40000, 100);
  inject::on_call_enter(Api::cudaFree);  // sequence taken here, before the memory is released
  std::thread other([] { call(Api::cudaMalloc, 0x40000, 200); });
  other.join();
  inject::on_call_exit({Api::cudaFree, 0x40000, 0, 0, 1, 0});

  ProcessTrace t = read_back();
  ProcessTrace mine;
  mine.events = events_with_key_in(t, 0x40000, 0x40001);
  REQUIRE(mine.events.size() == 3);
  mine.reached_exit = true;
  const auto result = replay(mine);
  REQUIRE(result.leaks.size() == 1);
  CHECK(result.leaks[0].allocation.bytes == 200);
}

TEST_CASE("many threads: no event is lost and every stack is readable") {
  constexpr int kThreads = 8, kPairs = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kPairs; ++i) {
        const uint64_t key = 0x1000000 + (static_cast<uint64_t>(t) << 20) + static_cast<uint64_t>(i) * 16;
        call(Api::cudaMalloc, key, 16);
        call(Api::cudaFree, key, 0);
      }
    });
  }
  for (auto& th : threads) th.join();
  const ProcessTrace t = read_back();
  const auto events = events_with_key_in(t, 0x1000000, 0x2000000);
  CHECK(events.size() == kThreads * kPairs * 2);
  CHECK(t.problems.empty());
  for (const auto& e : events) CHECK(t.stacks.count(e.stack_id) == 1);
  ProcessTrace mine;
  mine.events = events;
  mine.reached_exit = true;
  CHECK(replay(mine).leaks.empty());
}

TEST_CASE("the recorded stack symbolizes offline to the allocating function, file and line") {
  allocate_from_user_code(0x50000);
  const ProcessTrace t = read_back();
  const auto events = events_with_key_in(t, 0x50000, 0x50001);
  REQUIRE(events.size() == 1);
  REQUIRE(t.stacks.count(events[0].stack_id) == 1);

  Symbolizer symbolizer;
  StackResolver resolver(t, symbolizer);
  const auto& frames = resolver.user_stack(events[0].stack_id);
  REQUIRE_FALSE(frames.empty());
  // The recorder's own frames are dropped: the first frame is the caller of the API.
  CHECK(frames[0].function.find("call") != std::string::npos);  // inlined or not
  bool found = false;
  for (const auto& f : frames) {
    if (f.function.find("allocate_from_user_code") != std::string::npos) {
      found = true;
      CHECK(f.function.find("allocate_from_user_code(unsigned long)") != std::string::npos);
      CHECK(f.mangled.rfind("_Z", 0) == 0);  // as linked
      CHECK(f.mangled.find("allocate_from_user_code") != std::string::npos);
      CHECK(f.file.find("test_recorder_roundtrip.cpp") != std::string::npos);
      CHECK(f.line > 0);
    }
  }
  CHECK(found);
}

TEST_CASE("the trace records this process and its modules") {
  call(Api::cudaMalloc, 0x60000, 8);  // the first stack makes the module map record itself
  const ProcessTrace t = read_back();
  CHECK(t.pid == static_cast<uint64_t>(getpid()));
  bool has_self = false;
  for (const auto& m : t.modules) has_self |= m.path.find("cuaudit_unit_tests") != std::string::npos;
  CHECK(has_self);
}

TEST_CASE("a pool and its blocks read back: the pool's name, each block's pool, a returned block remembered") {
  trace_path();
  const uint32_t pool = inject::register_pool(trace::PoolKind::NvtxHeap, "SimplePool", 0x60000, 4096, 0, 0);
  REQUIRE(pool != 0);
  inject::record_pool_block(Api::nvtxMemRegionsRegister, pool, 0x60000, 256, 0, 0);
  inject::record_pool_block(Api::nvtxMemRegionsRegister, pool, 0x60100, 256, 0, 0);
  inject::record_pool_block(Api::nvtxMemRegionsUnregister, 0, 0x60100, 0, -1, 0);
  // The launch checks' view: anywhere in the returned block (its size known from when it was
  // handed out), not in the live one, and no longer once the pool hands it out again.
  CHECK(inject::in_returned_pool_block(0x60100));
  CHECK(inject::in_returned_pool_block(0x601ff));
  CHECK_FALSE(inject::in_returned_pool_block(0x60200));
  CHECK_FALSE(inject::in_returned_pool_block(0x60000));
  inject::record_pool_block(Api::nvtxMemRegionsRegister, pool, 0x60180, 64, 0, 0);
  CHECK_FALSE(inject::in_returned_pool_block(0x60180));
  CHECK_FALSE(inject::in_returned_pool_block(0x60100));  // the whole returned range is forgotten: never a guess
  // A resized block is given back at its new size.
  inject::record_pool_block(Api::nvtxMemRegionsRegister, pool, 0x61000, 64, 0, 0);
  inject::record_pool_block(Api::nvtxMemRegionsResize, 0, 0x61000, 512, -1, 0);
  inject::record_pool_block(Api::nvtxMemRegionsUnregister, 0, 0x61000, 0, -1, 0);
  CHECK(inject::in_returned_pool_block(0x611ff));
  CHECK_FALSE(inject::in_returned_pool_block(0x61200));

  const ProcessTrace t = read_back();
  REQUIRE(t.pools.count(pool) == 1);
  CHECK(t.pools.at(pool).name == "SimplePool");
  CHECK(t.pools.at(pool).kind == trace::PoolKind::NvtxHeap);
  CHECK(t.pools.at(pool).base == 0x60000);
  // The blocks only: another test's cudaMalloc may share their addresses.
  std::vector<Event> events = events_with_key_in(t, 0x60000, 0x60200);
  events.erase(
      std::remove_if(events.begin(), events.end(), [](const Event& e) { return !is_block_op(e.memory().api); }),
      events.end());
  REQUIRE(events.size() == 4);
  CHECK(events[0].memory().api == Api::nvtxMemRegionsRegister);
  CHECK(events[0].memory().pool == pool);
  CHECK(events[0].memory().context_uid == 0);
  // The heap's range is its segment, a record of its own (version 5).
  const auto segment =
      std::find_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.kind == EventKind::PoolSegment; });
  REQUIRE(segment != t.events.end());
  CHECK(segment->pool_segment().pool == pool);
  CHECK(segment->pool_segment().base == 0x60000);
  CHECK(segment->pool_segment().bytes == 4096);
  CHECK(segment->pool_segment().mapped);
  CHECK(events[2].kind == EventKind::Free);
  CHECK(events[3].memory().bytes == 64);
}

TEST_CASE("a loaded module's cubin or fat binary is kept beside the trace, once, what is neither is only said") {
  trace_path();
  inject::configure_kernel_code();
  std::string image(
      "\x7f"
      "ELF",
      4);
  image += "a module's code, unique to this test";
  inject::on_module_loaded(7001, image.data(), image.size());
  inject::on_module_loaded(7002, image.data(), image.size());  // the same code again: one file
  inject::on_module_loaded(7003, "// PTX text", 11);
  // A fat binary: its header says 24 bytes follow it, whatever size came with it.
  unsigned char fatbin[64] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 24, 0, 0, 0, 0, 0, 0, 0, 'c', 'o', 'd', 'e'};
  inject::on_module_loaded(7004, fatbin, sizeof fatbin);
  const ProcessTrace t = read_back();
  std::vector<ModuleCodeFact> ours;
  for (const ModuleCodeFact& m : t.module_code) {
    if (m.module_id >= 7001 && m.module_id <= 7004) ours.push_back(m);
  }
  REQUIRE(ours.size() == 4);
  CHECK(ours[0].status == trace::ModuleCodeStatus::Saved);
  CHECK(ours[0].hash == trace::content_hash64(image.data(), image.size()));
  CHECK(ours[0].bytes == image.size());
  CHECK(ours[1].hash == ours[0].hash);
  CHECK(ours[2].status == trace::ModuleCodeStatus::NotCode);
  CHECK(ours[3].status == trace::ModuleCodeStatus::SavedFatbin);
  CHECK(ours[3].bytes == 40);
  CHECK(ours[3].hash == trace::content_hash64(fatbin, 40));
  const std::string dir = trace_path().substr(0, trace_path().rfind('/'));
  char name[32];
  snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(ours[0].hash));
  std::ifstream kept(dir + "/kernel-code/" + name + ".cubin", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  CHECK(bytes == image);
}

TEST_CASE("a word of a kernel's parameters not 16-byte aligned reads back as a LowBits fact with its place") {
  trace_path();
  inject::record_kernel(9001, "_Z9by_params6Params");
  inject::LaunchBitsFact f;
  f.kernel_id = 9001, f.param_index = 1, f.member_offset = 8, f.buffer_offset = 24, f.value = 0x7f0000000004;
  f.path = trace::LaunchPath::cuLaunchKernel, f.stack_id = 0;
  inject::record_launch_bits(f);
  const ProcessTrace t = read_back();
  CHECK(t.kernels.at(9001) == "_Z9by_params6Params");
  bool found = false;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::LaunchParam || e.launch_param().kernel_id != 9001) continue;
    const LaunchParamFact& fact = e.launch_param();
    CHECK(fact.problem == trace::LaunchProblem::LowBits);
    CHECK(fact.word);
    CHECK(fact.param_index == 1);
    CHECK(fact.member_offset == 8);
    CHECK(fact.buffer_offset == 24);
    CHECK(fact.value == 0x7f0000000004);
    CHECK(fact.path == static_cast<uint8_t>(trace::LaunchPath::cuLaunchKernel));
    found = true;
  }
  CHECK(found);
}

TEST_CASE("a struct word in released memory reads back with its problem and the driver's answer") {
  trace_path();
  inject::record_kernel(9002, "_Z9by_params6Params");
  inject::LaunchBitsFact f;
  f.kernel_id = 9002, f.param_index = 0, f.member_offset = 8, f.buffer_offset = 8, f.value = 0x7f0000001000;
  f.problem = static_cast<uint8_t>(trace::LaunchProblem::NotAccessible);
  f.driver_result = 1, f.memory_type = 0, f.host_readable = true;
  inject::record_launch_bits(f);
  const ProcessTrace t = read_back();
  bool found = false;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::LaunchParam || e.launch_param().kernel_id != 9002) continue;
    const LaunchParamFact& fact = e.launch_param();
    CHECK(fact.word);
    CHECK(fact.problem == trace::LaunchProblem::NotAccessible);
    CHECK(fact.member_offset == 8);
    CHECK(fact.driver_result == 1);
    CHECK(fact.host_readable);
    found = true;
  }
  CHECK(found);
}
