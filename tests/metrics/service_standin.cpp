// Plays a GPU service under `cuaudit --metrics`, without CUDA: the real recorder writes what the
// injection would (as tests/crash/ does). Every 100 ms a request allocates a response it keeps
// (the growing site, @grow, in 64 KiB pieces) and a scratch buffer it frees (@scratch); the device's memory
// sample follows; an NVTX-style arena is cut into 1 MiB holes once (fragmentation).
// Usage: service_standin SECONDS (the trace directory comes from CUAUDIT_TRACE_DIR, as the
// launcher sets it).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "call_recorder.h"
#include "pool_recorder.h"
#include "process_record.h"
#include "stack_capture.h"
#include "stack_sampling.h"
#include "trace_writer.h"

using namespace cuaudit;

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kTotal = 80ull << 30;
uint64_t g_device_used = 0;

// What the injection records of one tracked call, written out at each site so that the site's own
// line is the allocation's first frame, as a CUDA call's is.
#define RECORD_CALL(api, key, bytes)                  \
  do {                                                \
    inject::on_call_enter(api);                       \
    inject::on_call_exit({api, key, bytes, 0, 1, 0}); \
  } while (0)

// A response is 16 pieces of 64 KiB: small enough that --mode watch samples their stacks.
__attribute__((noinline)) void keep_response(uint64_t request) {
  for (uint64_t piece = 0; piece < 16; ++piece)
    RECORD_CALL(Api::cudaMalloc, 0x7f0000000000 + request * kMiB + piece * 64 * 1024, 64 * 1024);  // @grow
  g_device_used += kMiB;
}

__attribute__((noinline)) void use_scratch() {
  RECORD_CALL(Api::cudaMalloc, 0x7e0000000000, 4 * kMiB);  // @scratch
  RECORD_CALL(Api::cudaFree, 0x7e0000000000, 0);
}

// 64 blocks of 1 MiB, every other one taken back: 32 holes of 1 MiB in 64 MiB.
__attribute__((noinline)) void fragment_arena() {
  constexpr uint64_t base = 0x7d0000000000;
  const uint32_t pool =
      inject::register_pool(MemorySource::NvtxHeap, "request arena", base, 64 * kMiB, 0, inject::capture_stack());
  for (uint64_t i = 0; i < 64; ++i)
    inject::record_pool_block(Api::nvtxMemRegionsRegister, pool, base + i * kMiB, kMiB, 0, inject::capture_stack());
  for (uint64_t i = 0; i < 64; i += 2)
    inject::record_pool_block(Api::nvtxMemRegionsUnregister, pool, base + i * kMiB, 0, 0, inject::capture_stack());
  g_device_used += 64 * kMiB;
}

void at_exit() {
  inject::on_process_end();
  inject::trace_writer().set_write_through();
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5;
  const char* dir = std::getenv("CUAUDIT_TRACE_DIR");
  char error[256];
  if (!dir || !inject::trace_writer().open(dir, error, sizeof error)) {
    std::fprintf(stderr, "service_standin: no trace (%s): run it under cuaudit\n",
                 dir ? error : "CUAUDIT_TRACE_DIR unset");
    return 2;
  }
  inject::write_process_info(50);  // as the injection does first
  inject::trace_writer().start_flusher(50);
  // What the injection does at its start (injection_main.cpp): --mode watch's sampling, from the
  // launcher's environment.
  const char* mean = std::getenv("CUAUDIT_STACK_SAMPLE_BYTES");
  const char* exact = std::getenv("CUAUDIT_STACK_EXACT_BYTES");
  inject::configure_stack_sampling(mean ? std::strtoull(mean, nullptr, 10) : 0,
                                   exact ? std::strtoull(exact, nullptr, 10) : kMiB);
  inject::record_stack_sampling();
  std::atexit(at_exit);
  fragment_arena();
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (uint64_t request = 0; std::chrono::steady_clock::now() < end; ++request) {
    keep_response(request);
    use_scratch();
    inject::record_memory_sample(0, kTotal - 500 * kMiB - g_device_used, kTotal);
    usleep(100 * 1000);
  }
  return 0;
}
