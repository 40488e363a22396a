// Where the injection's time goes, per stage of its callbacks (CUAUDIT_STATS=1, for benchmarks):
// how many times each stage ran and the cycles it took, printed at exit. Off by default, when a
// timer costs one predictable branch.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace cuaudit::inject {

#define CUAUDIT_STAGES(X)                                                            \
  X(Callback, "all of cuaudit's callback (CUPTI's own dispatch excluded)")           \
  X(TrackedCall, "  an allocation or release: decoding, recording, sampling")        \
  X(OtherRuntimeCall, "  any other runtime call: its result")                        \
  X(LaunchCheck, "  a kernel launch's parameters checked")                           \
  X(KernelLayout, "    a new kernel: its parameters' layout, asked of the driver")   \
  X(KernelTypes, "    a new kernel: its parameters' types, from its demangled name") \
  X(DriverQuery, "    a pointer asked of the driver (cuPointerGetAttributes)")       \
  X(StackCapture, "    native stack: unwinding, hashing, the stack record when new") \
  X(Unwind, "      the unwinding alone (cached CFI walk, or _Unwind_Backtrace)")     \
  X(UnwindFallback, "        stacks the CFI walk left to _Unwind_Backtrace")         \
  X(PythonStack, "    Python stack")                                                 \
  X(TraceAppend, "    the event records appended to the thread's buffer")

enum class Stage : uint8_t {
#define CUAUDIT_STAGE_ENUM(id, text) id,
  CUAUDIT_STAGES(CUAUDIT_STAGE_ENUM)
#undef CUAUDIT_STAGE_ENUM
      Count
};

extern bool g_stage_stats;  // set once at initialization, before any callback

inline uint64_t stage_clock() noexcept {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

void add_stage_time(Stage stage, uint64_t cycles) noexcept;

// Times its scope as `stage` when stats are on.
class StageTimer {
 public:
  explicit StageTimer(Stage stage) noexcept : stage_(stage), start_(g_stage_stats ? stage_clock() : 0) {}
  ~StageTimer() {
    if (start_) add_stage_time(stage_, stage_clock() - start_);
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  Stage stage_;
  uint64_t start_;
};

// CUAUDIT_STATS=1: start counting (calibrates the cycle clock against CLOCK_MONOTONIC).
void start_stage_stats() noexcept;
// At exit: one line per stage that ran, with its calls, mean nanoseconds and total milliseconds.
void log_stage_stats() noexcept;

}  // namespace cuaudit::inject
