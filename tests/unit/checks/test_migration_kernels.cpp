// The kernels running on a device at a moment, for naming the kernels whose page faults pulled
// managed memory to it.
#include <doctest/doctest.h>

#include <algorithm>

#include "migration_kernels.h"

using namespace cuaudit;

TEST_CASE("KernelRuns finds the runs going on at a moment on one device, a long one among many short ones too") {
  std::vector<KernelSpan> spans;
  spans.push_back({0, 1'000'000, 1, 0, 1});  // a long run from the start
  for (uint64_t i = 0; i < 1000; ++i) spans.push_back({1000 + i * 100, 1000 + i * 100 + 50, 2, 0, 2});
  spans.push_back({5000, 6000, 3, 1, 1});  // device 1
  const KernelRuns runs(spans);
  auto at = runs.running_at(0, 5020);
  std::sort(at.begin(), at.end());
  CHECK(at == std::vector<size_t>{0, 41});
  CHECK(runs.running_at(0, 5070) == std::vector<size_t>{0});
  CHECK(runs.running_at(1, 5500) == std::vector<size_t>{1001});
  CHECK(runs.running_at(2, 5500).empty());
  CHECK(runs.running_at(0, 2'000'000).empty());
}

TEST_CASE("the description names the kernels with the most faults first and counts the rest") {
  std::unordered_map<uint32_t, KernelMigrations> kernels;
  for (uint32_t id = 1; id <= 5; ++id) {
    kernels[id].gpu_faults = id * 10;
    kernels[id].to_device = id << 20;
    for (size_t run = 0; run < id; ++run) kernels[id].runs.insert(run);
  }
  const std::unordered_map<uint32_t, std::string> names = {{5, "_Z4fivev"}, {4, "four"}, {3, "three"}};
  CHECK(describe_kernel_migrations(kernels, names) ==
        "`five()`: 50 GPU page fault(s), 5.0 MiB to the device, in 5 run(s); `four`: 40 GPU page fault(s), 4.0 MiB "
        "to the device, in 4 run(s); `three`: 30 GPU page fault(s), 3.0 MiB to the device, in 3 run(s); and 2 more "
        "kernel(s)");
  kernels.clear();
  kernels[9].to_device = 1 << 20;  // moved while it ran, no fault of its own
  CHECK(describe_kernel_migrations(kernels, names) == "`?`: 0 GPU page fault(s), 1.0 MiB to the device");
}
