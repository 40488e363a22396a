// The launch checker on the CPU: the real check_launch, answered by a stand-in driver
// (tests/stand_in_driver/stand_in_driver.cpp, loaded as libcuda.so.1). Arguments found clean are not
// checked again while memory stays as it was (clean_launches.h), and are once it changes.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <string>

#include "call_recorder.h"
#include "driver_api.h"
#include "launch_checker.h"
#include "recorder_trace.h"
#include "stand_in_kernels.h"

using namespace cuaudit;
using bench::kSegmentStart;

namespace {

// The stand-in, loaded once for the process, and its switch for the segment's memory.
void (*segment_live)(bool) = nullptr;
void load_stand_in_driver() {
  if (segment_live) return;
  void* library = dlopen(CUAUDIT_STAND_IN_DRIVER, RTLD_NOW | RTLD_GLOBAL);
  REQUIRE(library != nullptr);
  segment_live = reinterpret_cast<void (*)(bool)>(dlsym(library, "cuaudit_stand_in_segment_live"));
  REQUIRE(bool(segment_live));
  inject::resolve_driver_api();
  REQUIRE(bool(inject::driver().pointer_get_attributes));
}

void tracked_call(Api api, uint64_t key, uint64_t bytes) {
  inject::on_call_enter(api);
  inject::ApiCall call{api};
  call.key = key, call.bytes = bytes, call.device = 0;
  inject::on_call_exit(call);
}

// Findings of `problem` recorded so far for the kernel named `name`.
size_t findings(const std::string& name, trace::LaunchProblem problem) {
  const ProcessTrace t = testing::read_recorder_trace();
  size_t n = 0;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::LaunchParam || e.launch_param().problem != problem) continue;
    const auto kernel = t.kernels.find(e.launch_param().kernel_id);
    n += kernel != t.kernels.end() && kernel->second == name;
  }
  return n;
}

void launch(const bench::StandInKernel& kernel, uint64_t (&args)[4]) {
  void* params[4] = {&args[0], &args[1], &args[2], &args[3]};
  inject::check_launch(trace::LaunchPath::cudaLaunchKernel, &kernel, kernel.name, params, nullptr);
}

}  // namespace

TEST_CASE("a launch whose arguments were found clean is checked again once memory is released") {
  testing::recorder_trace_path();
  load_stand_in_driver();
  tracked_call(Api::cudaMalloc, kSegmentStart, bench::kSegmentBytes);
  tracked_call(Api::cudaMalloc, kSegmentStart - (1 << 20), 4096);  // released below: a release alone
  static const bench::StandInKernel kernel{"_Z11stale_afterPfS_S_S_", 4, {0, 8, 16, 24}, {8, 8, 8, 8}};
  uint64_t args[4] = {kSegmentStart, kSegmentStart + 4096, kSegmentStart + 8192, kSegmentStart + 12288};
  for (int i = 0; i < 3; ++i) launch(kernel, args);
  CHECK(findings(kernel.name, trace::LaunchProblem::NotAccessible) == 0);
  // The memory goes: the program released it (another allocation's release stands for it here, the
  // stand-in's segment being switched off as the driver would forget it).
  segment_live(false);
  tracked_call(Api::cudaFree, kSegmentStart - (1 << 20), 0);
  launch(kernel, args);
  CHECK(findings(kernel.name, trace::LaunchProblem::NotAccessible) == 4);  // each of the four parameters
  segment_live(true);
}

TEST_CASE("a launch with other arguments than the clean ones is checked, and a finding is never remembered") {
  testing::recorder_trace_path();
  load_stand_in_driver();
  tracked_call(Api::cudaMalloc, kSegmentStart, bench::kSegmentBytes);
  static const bench::StandInKernel kernel{"_Z10other_argsPfS_S_S_", 4, {0, 8, 16, 24}, {8, 8, 8, 8}};
  uint64_t clean[4] = {kSegmentStart, kSegmentStart + 4096, kSegmentStart + 8192, kSegmentStart + 12288};
  launch(kernel, clean);
  launch(kernel, clean);
  uint64_t misaligned[4] = {kSegmentStart, kSegmentStart + 4096 + 2, kSegmentStart + 8192, kSegmentStart + 12288};
  for (int i = 0; i < 3; ++i) launch(kernel, misaligned);  // a float* two bytes in: every launch says so
  CHECK(findings(kernel.name, trace::LaunchProblem::Misaligned) == 3);
  launch(kernel, clean);
  CHECK(findings(kernel.name, trace::LaunchProblem::Misaligned) == 3);
}
