// Watch mode's stack sampling: the injection's sampler (injection/stack_sampling.h) and the tool's
// weights (tool/trace/stack_sampling.h) together give unbiased totals per site, large allocations
// exactly, and the sampled trace reads back as sampled.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "call_recorder.h"
#include "recorder_trace.h"
#include "stack_sample_weights.h"
#include "stack_sampling.h"

using namespace cuaudit;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

// Sampling on for one test, off again after it (the recorder's state is process-wide).
struct SamplingFor {
  SamplingFor(uint64_t mean, uint64_t exact) { inject::configure_stack_sampling(mean, exact); }
  ~SamplingFor() { inject::configure_stack_sampling(0, 0); }
};

struct Tally {
  uint64_t count = 0, bytes = 0;
  double estimated_count = 0, estimated_bytes = 0;
  uint64_t sampled = 0;
};

// `n` allocations of the sizes in `sizes` (drawn uniformly), tallied by size: what happened, and
// what the sampled ones estimate.
std::map<uint64_t, Tally> allocate(const std::vector<uint64_t>& sizes, size_t n, const StackSampling& weights,
                                   uint32_t seed) {
  std::mt19937 pick(seed);
  std::map<uint64_t, Tally> by_size;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t bytes = sizes[pick() % sizes.size()];
    Tally& t = by_size[bytes];
    ++t.count;
    t.bytes += bytes;
    if (inject::take_allocation_stack(bytes)) {
      ++t.sampled;
      t.estimated_count += weights.weight(bytes);
      t.estimated_bytes += weights.weight(bytes) * static_cast<double>(bytes);
    }
  }
  return by_size;
}

}  // namespace

TEST_CASE("sampled stacks estimate each size's count and bytes without bias, large allocations are all sampled") {
  const StackSampling weights{64 * KiB, 1 * MiB};
  const SamplingFor on(weights.mean_bytes, weights.exact_bytes);
  // Sizes from a tenth of the mean to past the exact size: the small ones sampled rarely, the
  // ones near the exact size almost always, the large ones always.
  const std::vector<uint64_t> sizes = {512, 6 * KiB, 60 * KiB, 900 * KiB, 2 * MiB};
  const std::map<uint64_t, Tally> by_size = allocate(sizes, 400'000, weights, 7);
  for (const auto& size_tally : by_size) {
    const uint64_t bytes = size_tally.first;  // not a structured binding: CAPTURE's lambda takes it (clang)
    const Tally& t = size_tally.second;
    CAPTURE(bytes);
    const double p = -std::expm1(-static_cast<double>(bytes) / static_cast<double>(weights.mean_bytes));
    if (bytes >= weights.exact_bytes) {
      CHECK(t.sampled == t.count);
      CHECK(t.estimated_bytes == doctest::Approx(static_cast<double>(t.bytes)));
      continue;
    }
    // The share sampled is the probability the tool weighs by, within 4 standard deviations.
    const double sd = std::sqrt(static_cast<double>(t.count) * p * (1 - p));
    CHECK(std::fabs(static_cast<double>(t.sampled) - p * static_cast<double>(t.count)) < 4 * sd + 1);
    // The estimates land within 4 standard errors (at most a few percent here) of what happened.
    const double relative_error = std::sqrt((1 - p) / (p * static_cast<double>(t.count)));
    CHECK(t.estimated_count == doctest::Approx(static_cast<double>(t.count)).epsilon(4 * relative_error + 0.001));
    CHECK(t.estimated_bytes == doctest::Approx(static_cast<double>(t.bytes)).epsilon(4 * relative_error + 0.001));
  }
  // Weighing by bytes / mean instead (Go's old profiler, golang/go#26618) would make the 900 KiB
  // allocations, sampled almost always, count more than 14 times over.
  const Tally& big = by_size.at(900 * KiB);
  CHECK(static_cast<double>(big.sampled) * (900.0 * KiB / weights.mean_bytes) > 10.0 * static_cast<double>(big.count));
}

TEST_CASE("each thread counts down its own bytes, estimates hold with threads allocating at once") {
  const StackSampling weights{32 * KiB, 0};
  const SamplingFor on(weights.mean_bytes, weights.exact_bytes);
  std::vector<std::map<uint64_t, Tally>> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] { results[i] = allocate({256, 4 * KiB}, 100'000, weights, static_cast<uint32_t>(i)); });
  for (std::thread& t : threads) t.join();
  double estimated = 0, actual = 0;
  for (const auto& r : results) {
    for (const auto& [bytes, t] : r) {
      estimated += t.estimated_bytes;
      actual += static_cast<double>(t.bytes);
    }
  }
  CHECK(estimated == doctest::Approx(actual).epsilon(0.03));
}

TEST_CASE("sampling off, a failed allocation and a failed release always walk their stack, a good release never") {
  CHECK(inject::take_allocation_stack(1));  // off: every event
  CHECK(inject::take_release_stack(0));
  const SamplingFor on(1 * MiB, 0);
  size_t sampled = 0;
  for (int i = 0; i < 1000; ++i) sampled += inject::take_allocation_stack(16);
  CHECK(sampled < 10);                          // 16 bytes of a mean of 1 MiB: about one in 65,536
  CHECK(inject::take_allocation_stack(16, 2));  // out of memory: reported at its line
  CHECK_FALSE(inject::take_release_stack(0));
  CHECK(inject::take_release_stack(1));  // an invalid free is reported at its line
}

TEST_CASE("a watch-mode trace says it was sampled, its unsampled events carry no stack") {
  testing::recorder_trace_path();
  {
    const SamplingFor on(4 * MiB, 8 * MiB);
    inject::record_stack_sampling();
    for (uint64_t i = 0; i < 64; ++i) {
      inject::on_call_enter(Api::cudaMalloc);
      inject::on_call_exit({Api::cudaMalloc, 0x5a5a0000 + i * 64, 64, 0, 1, 0});  // 64 B of a mean of 4 MiB
    }
    inject::on_call_enter(Api::cudaMalloc);
    inject::on_call_exit({Api::cudaMalloc, 0x5a600000, 8 * MiB, 0, 1, 0});  // exact
    inject::on_call_enter(Api::cudaFree);
    inject::on_call_exit({Api::cudaFree, 0x5a600000, 0, 0, 1, 0});
  }
  const ProcessTrace t = testing::read_recorder_trace();
  CHECK(t.stack_sampling.mean_bytes == 4 * MiB);
  CHECK(t.stack_sampling.exact_bytes == 8 * MiB);
  size_t small_with_stack = 0, small = 0;
  for (const Event& e : t.events) {
    if (!e.is_memory()) continue;
    const MemoryEvent& m = e.memory();
    if (m.key >= 0x5a5a0000 && m.key < 0x5a5b0000) {
      ++small;
      small_with_stack += m.stack_id != trace::kNoStack;
    }
    if (m.key == 0x5a600000 && e.kind == EventKind::Alloc) CHECK(m.stack_id != trace::kNoStack);
    if (m.key == 0x5a600000 && e.kind == EventKind::Free) CHECK(m.stack_id == trace::kNoStack);
  }
  CHECK(small == 64);
  CHECK(small_with_stack <= 1);
}
