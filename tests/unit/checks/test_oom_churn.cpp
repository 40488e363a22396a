// Out of memory diagnosed (the device at that moment, who held it, a verdict) and allocation churn
// (pairs, lifetimes, time in the calls), over synthetic streams as the injection records them.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>

#include <cmath>

#include "churn_findings.h"
#include "error_findings.h"
#include "oom_findings.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr int32_t kOutOfMemory = 2;  // cudaErrorMemoryAllocation

struct Judged {
  std::vector<report::Finding> oom, errors;
};

Judged judge(const ProcessTrace& trace) {
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  CallSiteJudge site_judge;
  FailureJudge failures(trace, stacks, site_judge);
  std::set<uint64_t> explained;
  Judged j;
  j.oom = oom_findings(trace, stacks, failures, explained);
  j.errors = error_findings(trace, explained, stacks, failures, {});
  return j;
}

std::vector<report::Finding> churn(const ProcessTrace& trace, ChurnOptions options = {}) {
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  return churn_findings(trace, stacks, options);
}

}  // namespace

TEST_CASE("the verdict says what filled the device") {
  CHECK(oom_verdict({200 * kGiB, 140 * kGiB, 100 * kGiB, 0, 0}).find("larger than the device") != std::string::npos);
  CHECK(oom_verdict({4 * kGiB, 140 * kGiB, 1 * kGiB, 10 * kGiB, 120 * kGiB}) ==
        "another process holds 120.0 GiB of the device");
  // Enough free on the device says only that: the driver's layout is not measured.
  CHECK(oom_verdict({4 * kGiB, 140 * kGiB, 6 * kGiB, 130 * kGiB, 0}).find("reported enough free memory (6.0 GiB)") !=
        std::string::npos);
  CHECK(oom_verdict({4 * kGiB, 140 * kGiB, 6 * kGiB, 130 * kGiB, 0}).find("fragmentation") == std::string::npos);
  CHECK(oom_verdict({4 * kGiB, 140 * kGiB, 1 * kGiB, 136 * kGiB, std::nullopt}) ==
        "the program's own allocations filled the device");
  CHECK(oom_verdict({4 * kGiB, 140 * kGiB, 1 * kGiB, 2 * kGiB, std::nullopt}).find("did not allocate") !=
        std::string::npos);
  CHECK(oom_verdict({4 * kGiB, std::nullopt, std::nullopt, 0, std::nullopt}).find("page-locked") != std::string::npos);
}

TEST_CASE("a free count that contradicts what the program holds on the device makes no fragmentation verdict") {
  // Seen on the H200: 17 cudaMalloc of 8 GiB held (136 GiB of 139.8), and the sample right after the
  // 18th failed said 115.3 GiB free.
  const uint64_t total = 140 * kGiB, held = 136 * kGiB;
  const OomFacts lagging{8 * kGiB, total, 115 * kGiB, held, std::nullopt, held};
  CHECK(believable_free(lagging) == total - held);
  CHECK(oom_verdict(lagging) == "the program's own allocations filled the device");
  // Managed and host memory need not sit in the device's memory: they contradict nothing.
  const OomFacts managed{8 * kGiB, total, 115 * kGiB, held, std::nullopt, 0};
  CHECK(believable_free(managed) == 115 * kGiB);
  CHECK(oom_verdict(managed).find("reported enough free") != std::string::npos);
  // A count that leaves room for what is held stands.
  const OomFacts consistent{4 * kGiB, total, 6 * kGiB, 130 * kGiB, std::nullopt, 130 * kGiB};
  CHECK(believable_free(consistent) == 6 * kGiB);
  CHECK(oom_verdict(consistent).find("reported enough free") != std::string::npos);
}

TEST_CASE("fragmentation is a verdict only where a pool's holes were measured") {
  OomFacts x{24 * kGiB, 140 * kGiB, 20 * kGiB, 120 * kGiB, std::nullopt, 120 * kGiB};
  x.holey_pool = "PyTorch's CUDA caching allocator";
  x.pool_holes = 59 * kGiB, x.pool_largest_free = 10 * kGiB;
  CHECK(oom_verdict(x) ==
        "free memory was enough in total inside PyTorch's CUDA caching allocator (59.0 GiB in holes) but no hole was "
        "as large as the request (the largest 10.0 GiB): fragmentation, measured in the pool");
  // A process that holds most of the device still comes first.
  x.other_processes = 100 * kGiB;
  x.program_held = 20 * kGiB;
  CHECK(oom_verdict(x).find("another process") == 0);
}

TEST_CASE("a leak that fills the device: one out_of_memory at the failing call, with the leaking site as holder") {
  SyntheticTrace t;
  for (uint64_t i = 0; i < 19; ++i) t.alloc(Api::cudaMalloc, (i + 1) * 8 * kGiB, 4 * kGiB, /*stack=*/5).wait(1'000'000);
  t.sample(79 * kGiB);
  for (int attempt = 0; attempt < 3; ++attempt) {
    t.alloc(Api::cudaMalloc, 0, 4 * kGiB, /*stack=*/6, kOutOfMemory).sample(79 * kGiB).failure_state(0, 0);
  }
  const Judged j = judge(t.end().trace());
  REQUIRE(j.oom.size() == 1);
  const report::Finding& f = j.oom[0];
  CHECK(f.kind == report::FindingKind::OutOfMemory);
  CHECK(f.count == 3);
  CHECK(f.bytes == 4 * kGiB);
  CHECK(f.device == 0);
  CHECK(f.at.has_value());
  REQUIRE(f.out_of_memory);
  CHECK(f.out_of_memory->program_held == 76 * kGiB);
  CHECK(f.out_of_memory->device_total == 80 * kGiB);
  CHECK(f.out_of_memory->device_free == 1 * kGiB);
  CHECK(f.out_of_memory->other_processes == 0u);
  CHECK(f.out_of_memory->verdict == "the program's own allocations filled the device");
  REQUIRE_FALSE(f.related.empty());
  CHECK(f.related[0].role == report::RelatedRole::Holder);
  CHECK(f.related[0].title.find("held 76.0 GiB in 19 allocation(s) made between") == 0);
  // Undecided handling (no machine code to read) is never called unchecked: a warning.
  CHECK(f.severity == report::Severity::Warning);
  CHECK(j.errors.empty());  // not also an api_error or unchecked_error
}

TEST_CASE("watch mode: the holders of an out-of-memory moment are what their sampled stacks stand for") {
  SyntheticTrace t;
  t.sampled_stacks(64 * 1024, 1 << 20);
  // 400 leaked 4 KiB allocations of one site, 40 of them sampled; one exact 2 MiB at another.
  for (uint64_t i = 0; i < 400; ++i) t.alloc(Api::cudaMalloc, 0x100000 + i * 0x1000, 4096, i % 10 == 0 ? 5 : 0);
  t.alloc(Api::cudaMalloc, 0x9000000, 2 << 20, 7).sample(79 * kGiB);
  t.alloc(Api::cudaMalloc, 0, 4 * kGiB, /*stack=*/6, kOutOfMemory).sample(79 * kGiB).failure_state(0, 0);
  const Judged j = judge(t.end().trace());
  REQUIRE(j.oom.size() == 1);
  const report::Finding& f = j.oom[0];
  REQUIRE(f.related.size() == 2);  // the unsampled 360 are in no holder of their own
  const double weight = 1.0 / -std::expm1(-4096.0 / 65536.0);
  const std::string sampled = fmt::format("held {} in {} allocation(s)",
                                          report::human_bytes(40 * static_cast<uint64_t>(std::llround(4096 * weight))),
                                          std::llround(40 * weight));
  CHECK(f.related[0].title.find(sampled) == 0);                            // about 2.6 MiB in 660
  CHECK(f.related[1].title.find("held 2.0 MiB in 1 allocation(s)") == 0);  // exact
  CHECK(std::count_if(f.notes.begin(), f.notes.end(), [](const std::string& n) {
          return n.find("the holders' figures are estimated from sampled stacks") == 0;
        }) == 1);
}

TEST_CASE("another process's memory and an unknown NVML answer are said as such") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x1000, kGiB, 5).sample(79 * kGiB);
  t.alloc(Api::cudaMalloc, 0, 4 * kGiB, 6, kOutOfMemory).sample(79 * kGiB).failure_state(0, 70 * kGiB);
  t.alloc(Api::cudaMalloc, 0, 2 * kGiB, 7, kOutOfMemory).sample(79 * kGiB).failure_state(0, std::nullopt);
  const Judged j = judge(t.end().trace());
  REQUIRE(j.oom.size() == 2);
  CHECK(j.oom[0].out_of_memory->verdict == "another process holds 70.0 GiB of the device");
  CHECK_FALSE(j.oom[1].out_of_memory->other_processes);
  bool said_unknown = false;
  for (const auto& note : j.oom[1].notes) said_unknown |= note.find("unknown (NVML") != std::string::npos;
  CHECK(said_unknown);
}

TEST_CASE("other failures are not out of memory, they stay error findings") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0, 64, 6, /*cudaErrorInvalidValue*/ 1);
  const Judged j = judge(t.end().trace());
  CHECK(j.oom.empty());
  CHECK(j.errors.size() == 1);
}

TEST_CASE("a hot loop of allocate/free pairs is churn, with its lifetime and its share of the run") {
  SyntheticTrace t;
  for (uint64_t i = 0; i < 2000; ++i) {
    t.alloc(Api::cudaMalloc, 0x7000, 4096, /*stack=*/5).took(50'000).wait(30'000);
    t.release(Api::cudaFree, 0x7000).took(20'000);
  }
  const auto info = churn(t.end().trace());
  REQUIRE(info.size() == 1);
  const report::Finding& f = info[0];
  CHECK(f.kind == report::FindingKind::AllocationChurn);
  CHECK(f.severity == report::Severity::Info);
  CHECK(f.count == 2000);
  CHECK(f.bytes == 4096);
  REQUIRE(f.churn);
  CHECK(f.churn->pairs == 2000);
  CHECK(f.churn->call_ns == 2000u * 70'000);
  CHECK(f.churn->median_lifetime_ns == 31'000);  // 30 us of waiting plus the synthetic clock's 1 us a step
  CHECK(f.churn->run_share > 0.5);
  CHECK(f.headline.find("2000 cudaMalloc/cudaFree pairs of 4.0 KiB") != std::string::npos);
  CHECK(f.notes[0].find("cudaMallocAsync") != std::string::npos);
  ChurnOptions strict;
  strict.warn_percent = 10.0;
  CHECK(churn(t.trace(), strict)[0].severity == report::Severity::Warning);
}

TEST_CASE("watch mode: churn at a sampled site counts the pairs its samples stand for, unsampled pairs at no site") {
  SyntheticTrace t;
  t.sampled_stacks(64 * 1024, 1 << 20);
  // 2,000 pairs of 4 KiB: one in 16 sampled at stack 5 (p = 0.0606 each: 125 samples stand for 2,063).
  for (uint64_t i = 0; i < 2000; ++i) {
    t.alloc(Api::cudaMalloc, 0x7000, 4096, i % 16 == 0 ? 5 : 0).took(50'000).wait(30'000);
    t.release(Api::cudaFree, 0x7000, 0, 0, trace::kNoStack).took(20'000);
  }
  const auto info = churn(t.end().trace());
  REQUIRE(info.size() == 1);
  CHECK(info[0].count == 2063);
  CHECK(info[0].bytes == 4096);
  CHECK(info[0].notes.back().find("estimated from sampled stacks") != std::string::npos);
}

TEST_CASE("allocating once, or a few times, is not churn") {
  SyntheticTrace t;
  for (uint64_t i = 0; i < 50; ++i) t.alloc(Api::cudaMalloc, 0x7000, 4096, 5).release(Api::cudaFree, 0x7000);
  t.alloc(Api::cudaMalloc, 0x9000, 1 << 30, 6);
  CHECK(churn(t.end().trace()).empty());
}

TEST_CASE("a framework's retry of one request is one failure, a program's loop that asks again is several") {
  SyntheticTrace t;
  t.python_stack(40, {{"/src/train.py", 12, "<module>"}});
  t.alloc(Api::cudaMalloc, 8 * kGiB, 70 * kGiB, /*stack=*/5).sample(71 * kGiB);
  // PyTorch: the first attempt in alloc_block (stack 6), the retry after releasing its cache (stack 7).
  t.alloc_from_python(Api::cudaMalloc, 0, 24 * kGiB, 40, /*stack=*/6);
  t.alloc_from_python(Api::cudaMalloc, 0, 24 * kGiB, 40, /*stack=*/7);
  ProcessTrace trace = t.trace();
  for (Event& e : trace.events) {
    if (e.is_memory() && e.memory().bytes == 24 * kGiB) e.memory().result = kOutOfMemory;
  }
  Judged j = judge(trace);
  REQUIRE(j.oom.size() == 1);
  CHECK(j.oom[0].count == 1);
  bool retried = false;
  for (const std::string& n : j.oom[0].notes) retried |= n.find("1 retry(ies) failed as well") != std::string::npos;
  CHECK(retried);
  // At the Python line, with the framework's call beside it.
  REQUIRE_FALSE(j.oom[0].stack.empty());
  CHECK(j.oom[0].stack[0].file == "/src/train.py");
  CHECK(j.oom[0].stack[0].line == 12);
}
