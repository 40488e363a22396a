#include "fake_api.h"

#include <boost/stacktrace/safe_dump_to.hpp>
#include <cstdio>

uint64_t g_frames[64];
size_t g_frame_count;
volatile int g_sink;

extern "C" __attribute__((noinline)) int fake_cuda_call(void** out) {
  *out = nullptr;
  // Skip this function: the first frame is the return address in the caller, as for a real API.
  g_frame_count = boost::stacktrace::safe_dump_to(1, g_frames, sizeof g_frames);
  while (g_frame_count > 0 && g_frames[g_frame_count - 1] == 0) --g_frame_count;
  return 2;
}

extern "C" __attribute__((noinline)) void report_error(int code) { g_sink = code; }
extern "C" __attribute__((noinline)) void other_work() { g_sink = 0; }
