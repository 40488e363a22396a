#include <doctest/doctest.h>

#include <algorithm>

#include "leak_findings.h"
#include "release_findings.h"
#include "replay.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

constexpr int32_t kInvalidValue = 1;  // cudaErrorInvalidValue == CUDA_ERROR_INVALID_VALUE

struct Judged {
  ReplayResult replay;
  std::vector<report::Finding> findings;  // release findings, then leaks
};

Judged judge(const ProcessTrace& trace) {
  Judged j{replay(trace), {}};
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  j.findings = release_findings(j.replay.release_findings, trace, stacks);
  for (auto& f : leak_findings(trace, j.replay, stacks, testing::no_holders())) j.findings.push_back(std::move(f));
  return j;
}

bool is_libc(Api api) { return api_info(api).family == MemoryFamily::HostHeap; }

}  // namespace

TEST_CASE("mismatched releases, for each family pair, name both APIs and leave the memory live") {
  struct Case {
    Api alloc, wrong;
  };
  const Case cases[] = {
      {Api::cudaMallocHost, Api::cudaFree},         {Api::cudaHostAlloc, Api::cuMemFree},
      {Api::cuMemAllocHost, Api::cudaFree},         {Api::cuMemHostAlloc, Api::cuMemFree},
      {Api::cudaMalloc, Api::cudaFreeHost},         {Api::cuMemAlloc, Api::cuMemFreeHost},
      {Api::cudaMallocManaged, Api::cudaFreeHost},  {Api::cudaHostRegister, Api::cudaFreeHost},
      {Api::cuMemHostRegister, Api::cuMemFreeHost}, {Api::cudaMalloc, Api::cudaHostUnregister},
      {Api::cudaMallocArray, Api::cudaFree},        {Api::cuArrayCreate, Api::cuMemFree},
      {Api::cudaMalloc, Api::cudaFreeArray},        {Api::cudaMallocMipmappedArray, Api::cudaFreeArray},
      {Api::cudaMallocHost, Api::libc_free},        {Api::cudaHostAlloc, Api::libc_realloc},
      {Api::cudaMallocManaged, Api::cxx_delete},    {Api::cuMemAllocHost, Api::cxx_delete_array},
  };
  for (const Case& c : cases) {
    CAPTURE(api_info(c.alloc).name);
    CAPTURE(api_info(c.wrong).name);
    const auto j = judge(SyntheticTrace()
                             .alloc(c.alloc, 0x10000, 4096, /*stack=*/1)
                             .release(c.wrong, 0x10000, is_libc(c.wrong) ? 0 : kInvalidValue)
                             .end()
                             .trace());
    REQUIRE(j.replay.release_findings.size() == 1);
    CHECK(j.replay.release_findings[0].problem == ReleaseProblem::Mismatched);
    REQUIRE(j.findings.size() == 2);
    const auto& f = j.findings[0];
    CHECK(f.kind == report::FindingKind::MismatchedFree);
    CHECK(f.api == api_info(c.wrong).name);
    CHECK(f.headline.find(std::string(api_info(c.alloc).name) + " released with " +
                          std::string(api_info(c.wrong).name)) != std::string::npos);
    REQUIRE(f.related.size() == 1);
    CHECK(f.related[0].role == report::RelatedRole::Allocation);
    CHECK(f.related[0].api == api_info(c.alloc).name);
    // One story: the leak says which release failed to release it.
    CHECK(j.findings[1].kind == report::FindingKind::Leak);
    REQUIRE_FALSE(j.findings[1].notes.empty());
    CHECK(j.findings[1].notes.back().find("did not release it") != std::string::npos);
  }
}

TEST_CASE("the mismatch message names the release that fits") {
  CHECK(right_release_for(Api::cudaMallocHost) == "cudaFreeHost");
  CHECK(right_release_for(Api::cudaHostAlloc) == "cudaFreeHost");
  CHECK(right_release_for(Api::cuMemAllocHost) == "cuMemFreeHost");
  CHECK(right_release_for(Api::cudaMallocManaged) == "cudaFree");
  CHECK(right_release_for(Api::cuMemAllocManaged) == "cuMemFree");
  CHECK(right_release_for(Api::cudaHostRegister) == "cudaHostUnregister");
  CHECK(right_release_for(Api::cudaMallocArray) == "cudaFreeArray");
  CHECK(right_release_for(Api::cuMemCreate) == "cuMemRelease");
  const auto j =
      judge(SyntheticTrace().alloc(Api::cudaMallocHost, 0x1000, 8).release(Api::cudaFree, 0x1000, 1).end().trace());
  CHECK(j.findings[0].message ==
        "pinned host memory from cudaMallocHost released with cudaFree; release it with cudaFreeHost");
  CHECK(j.findings[0].headline ==
        "Mismatched free: pinned host memory from cudaMallocHost released with cudaFree (returned "
        "cudaErrorInvalidValue) at:");
  CHECK(j.findings[0].result == "cudaErrorInvalidValue");
}

TEST_CASE("correct releases of every family give no release finding") {
  const auto j = judge(SyntheticTrace()
                           .alloc(Api::cudaMalloc, 0x1000, 64)
                           .release(Api::cudaFree, 0x1000)
                           .alloc(Api::cudaMallocManaged, 0x2000, 64)
                           .release(Api::cudaFree, 0x2000)
                           .alloc(Api::cudaMallocAsync, 0x3000, 64)
                           .release(Api::cudaFreeAsync, 0x3000)
                           .alloc(Api::cudaMallocAsync, 0x4000, 64)
                           .release(Api::cudaFree, 0x4000)  // legal: cudaFree synchronizes
                           .alloc(Api::cudaHostRegister, 0x5000, 64)
                           .release(Api::cudaHostUnregister, 0x5000)
                           .end()
                           .trace());
  CHECK(j.replay.release_findings.empty());
  CHECK(j.findings.empty());
}

TEST_CASE("double free shows the second release, the first release and the allocation") {
  const auto j = judge(SyntheticTrace()
                           .alloc(Api::cudaMalloc, 0x1000, 4096, /*stack=*/10)
                           .release(Api::cudaFree, 0x1000, 0, 0, /*stack=*/11)
                           .release(Api::cudaFree, 0x1000, kInvalidValue, 0, /*stack=*/12)
                           .end()
                           .trace());
  REQUIRE(j.replay.release_findings.size() == 1);
  const auto& p = j.replay.release_findings[0];
  CHECK(p.problem == ReleaseProblem::Double);
  CHECK(p.release.stack_id == 12);
  CHECK(p.first_release->stack_id == 11);
  CHECK(p.allocation->stack_id == 10);
  REQUIRE(j.findings.size() == 1);
  CHECK(j.findings[0].kind == report::FindingKind::DoubleFree);
  REQUIRE(j.findings[0].related.size() == 2);
  CHECK(j.findings[0].related[0].role == report::RelatedRole::FirstRelease);
  CHECK(j.findings[0].related[1].role == report::RelatedRole::Allocation);
}

TEST_CASE("a stream-ordered free after a free of the same allocation is a double free") {
  const auto j = judge(SyntheticTrace()
                           .alloc(Api::cudaMallocAsync, 0x1000, 64)
                           .release(Api::cudaFree, 0x1000)
                           .release(Api::cudaFreeAsync, 0x1000, kInvalidValue)
                           .end()
                           .trace());
  REQUIRE(j.replay.release_findings.size() == 1);
  CHECK(j.replay.release_findings[0].problem == ReleaseProblem::Double);
  CHECK(j.replay.release_findings[0].first_release->api == Api::cudaFree);
}

TEST_CASE("address reuse does not fool the double-free check") {
  const auto clean = judge(SyntheticTrace()
                               .alloc(Api::cudaMalloc, 0x1000, 4096)
                               .release(Api::cudaFree, 0x1000)
                               .alloc(Api::cudaMalloc, 0x1000, 4096)
                               .release(Api::cudaFree, 0x1000)
                               .end()
                               .trace());
  CHECK(clean.replay.release_findings.empty());
  // A new allocation overlapping a released address clears its history too.
  const auto overlap = judge(SyntheticTrace()
                                 .alloc(Api::cudaMalloc, 0x1100, 256)
                                 .release(Api::cudaFree, 0x1100)
                                 .alloc(Api::cudaMalloc, 0x1000, 4096)
                                 .release(Api::cudaFree, 0x1100, kInvalidValue)
                                 .release(Api::cudaFree, 0x1000)
                                 .end()
                                 .trace());
  REQUIRE(overlap.replay.release_findings.size() == 1);
  CHECK(overlap.replay.release_findings[0].problem == ReleaseProblem::Invalid);  // interior, not double
  CHECK(overlap.replay.release_findings[0].offset == 0x100);
}

TEST_CASE("releases from several threads are judged in the order they happened") {
  // Thread A frees, thread B then allocates the same address, thread A's free is recorded last
  // in its own buffer but carries the earlier sequence number.
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x1000, 64);
  t.release(Api::cudaFree, 0x1000);
  t.alloc(Api::cudaMalloc, 0x1000, 64);
  ProcessTrace trace = t.end().trace();
  trace.events[1].tid = 1;
  trace.events[2].tid = 2;
  std::swap(trace.events[1], trace.events[2]);  // file order differs from sequence order
  std::stable_sort(trace.events.begin(), trace.events.end(),
                   [](const Event& a, const Event& b) { return a.seq < b.seq; });
  const auto j = judge(trace);
  CHECK(j.replay.release_findings.empty());
  CHECK(j.replay.leaks.size() == 1);
}

TEST_CASE("an interior pointer is an invalid free naming the allocation and offset") {
  const auto j = judge(SyntheticTrace()
                           .alloc(Api::cudaMalloc, 0x1000, 4096, 5)
                           .release(Api::cudaFree, 0x1010, kInvalidValue)
                           .release(Api::cudaFree, 0x1000)
                           .end()
                           .trace());
  REQUIRE(j.findings.size() == 1);
  CHECK(j.findings[0].kind == report::FindingKind::InvalidFree);
  CHECK(j.findings[0].headline ==
        "Invalid free: cudaFree of 0x1010, 16 byte(s) inside a 4096-byte allocation of device memory from cudaMalloc "
        "(returned cudaErrorInvalidValue) at:");
  REQUIRE(j.findings[0].related.size() == 1);
  CHECK(j.findings[0].related[0].role == report::RelatedRole::Allocation);
}

TEST_CASE("a pointer no allocator returned is an invalid free, nullptr and accepted unknowns are not") {
  const auto j = judge(SyntheticTrace()
                           .release(Api::cudaFree, 0x7ffd0000, kInvalidValue)
                           .release(Api::cudaFree, 0)
                           .release(Api::cudaFree, 0x9000, 0)  // CUDA accepted it: memory we did not see
                           .end()
                           .trace());
  REQUIRE(j.findings.size() == 1);
  CHECK(j.findings[0].kind == report::FindingKind::InvalidFree);
  CHECK(j.findings[0].related.empty());
  CHECK(j.replay.unmatched_releases == 1);
}

TEST_CASE("releases during CUDA shutdown are never judged") {
  const auto j = judge(SyntheticTrace()
                           .alloc(Api::cudaMalloc, 0x1000, 64)
                           .release(Api::cudaFree, 0x1000)
                           .end()
                           .release(Api::cudaFree, 0x1000, /*cudaErrorCudartUnloading=*/4)
                           .release(Api::cudaFreeHost, 0x2000, 4)
                           .trace());
  CHECK(j.findings.empty());
}

TEST_CASE("the same bug repeated at the same sites is one finding with a count") {
  SyntheticTrace t;
  for (uint64_t i = 0; i < 5; ++i) {
    t.alloc(Api::cudaMalloc, 0x1000 + i * 0x1000, 100, 1).release(Api::cudaFreeHost, 0x1000 + i * 0x1000, 1, 0, 2);
    t.release(Api::cudaFree, 0x1000 + i * 0x1000, 0, 0, 3);
  }
  const auto j = judge(t.end().trace());
  REQUIRE(j.findings.size() == 1);
  CHECK(j.findings[0].count == 5);
  CHECK(j.findings[0].bytes == 500);
  CHECK(j.findings[0].headline.find("(5 times)") != std::string::npos);
}
