// A stand-in for a CUDA API that fails: it records its caller's stack as cuaudit's injection
// does, so the self-test can judge the call site in its own machine code.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" int fake_cuda_call(void** out);  // always fails with 2 (out of memory)
extern "C" void report_error(int code);     // a sink that the optimizer cannot see through
extern "C" void other_work();

extern uint64_t g_frames[64];
extern size_t g_frame_count;
