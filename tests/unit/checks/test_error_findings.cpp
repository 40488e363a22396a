#include <doctest/doctest.h>

#include "error_findings.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;

namespace {

constexpr uint32_t kLaunchCbid = 211, kMemcpyCbid = 31, kGetLastErrorCbid = 10;

Event call(EventKind kind, uint64_t seq, uint32_t cbid, int32_t result, uint32_t tid = 1, uint64_t stack = 7) {
  Event e;
  e.kind = kind;
  e.seq = seq;
  e.payload = RuntimeCall{cbid, result};
  e.tid = tid;
  e.stack_id = stack;
  return e;
}

std::vector<report::Finding> judge(const std::vector<Event>& events, const std::set<uint64_t>& explained = {}) {
  ProcessTrace t;
  t.pid = 9;
  t.runtime_names = {{kLaunchCbid, "cudaLaunchKernel_v7000"},
                     {kMemcpyCbid, "cudaMemcpy_v3020"},
                     {kGetLastErrorCbid, "cudaGetLastError_v3020"}};
  t.events = events;
  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  CallSiteJudge site_judge;  // no module files here: every call site is undecidable
  FailureJudge failures(t, stacks, site_judge);
  return error_findings(t, explained, stacks, failures, {});
}

}  // namespace

TEST_CASE("a failed launch that nothing retrieved is unchecked, whatever the call site") {
  const auto f = judge({call(EventKind::FailedCall, 1, kLaunchCbid, 9 /*cudaErrorInvalidConfiguration*/)});
  REQUIRE(f.size() == 1);
  CHECK(f[0].kind == report::FindingKind::UncheckedError);
  CHECK(f[0].severity == report::Severity::Error);
  CHECK(f[0].api == "cudaLaunchKernel");
  CHECK(f[0].result == "cudaErrorInvalidConfiguration");
  CHECK(f[0].notes[0].find("before the program ended") != std::string::npos);
}

TEST_CASE("a failed launch retrieved by cudaGetLastError on the same thread is handled") {
  const auto f =
      judge({call(EventKind::FailedCall, 1, kLaunchCbid, 9), call(EventKind::LastError, 2, kGetLastErrorCbid, 9)});
  REQUIRE(f.size() == 1);
  CHECK(f[0].kind == report::FindingKind::ApiError);
  CHECK(f[0].severity == report::Severity::Info);
}

TEST_CASE("a retrieval on another thread, or after another error replaced it, does not count") {
  const auto other_thread = judge({call(EventKind::FailedCall, 1, kLaunchCbid, 9, /*tid=*/1),
                                   call(EventKind::LastError, 2, kGetLastErrorCbid, 9, /*tid=*/2)});
  REQUIRE(other_thread.size() == 1);
  CHECK(other_thread[0].kind == report::FindingKind::UncheckedError);

  const auto replaced = judge({call(EventKind::FailedCall, 1, kLaunchCbid, 9, 1, /*stack=*/7),
                               call(EventKind::FailedCall, 2, kMemcpyCbid, 1, 1, /*stack=*/8),
                               call(EventKind::LastError, 3, kGetLastErrorCbid, 1)});
  REQUIRE(replaced.size() == 2);
  CHECK(replaced[0].kind == report::FindingKind::UncheckedError);
  CHECK(replaced[0].notes[0].find("another error replaced it") != std::string::npos);
  CHECK(replaced[1].kind == report::FindingKind::ApiError);  // the memcpy's error was the one retrieved
}

TEST_CASE("an undecidable call site is never reported as unchecked") {
  const auto f = judge({call(EventKind::FailedCall, 1, kMemcpyCbid, 1)});
  REQUIRE(f.size() == 1);
  CHECK(f[0].kind == report::FindingKind::ApiError);
  CHECK(f[0].notes[0].find("could not follow") != std::string::npos);
}

TEST_CASE("shutdown, polling and peer-access results are not failures, explained ones are not repeated") {
  CHECK(judge({call(EventKind::FailedCall, 1, kMemcpyCbid, 4)}).empty());
  CHECK(judge({call(EventKind::FailedCall, 1, kMemcpyCbid, 600)}).empty());
  CHECK(judge({call(EventKind::FailedCall, 1, kMemcpyCbid, 704)}).empty());
  CHECK(judge({call(EventKind::FailedCall, 5, kLaunchCbid, 9)}, {5}).empty());
}

TEST_CASE("the same failure at the same site is one entry with a count") {
  const auto f = judge({call(EventKind::FailedCall, 1, kLaunchCbid, 9), call(EventKind::FailedCall, 2, kLaunchCbid, 9),
                        call(EventKind::FailedCall, 3, kLaunchCbid, 9)});
  REQUIRE(f.size() == 1);
  CHECK(f[0].count == 3);
  CHECK(f[0].headline.find("(3 times)") != std::string::npos);
}

TEST_CASE("a failed allocation's pointer later given to a failing copy on the same thread is named") {
  ProcessTrace t;
  t.pid = 9;
  t.runtime_names = {{kMemcpyCbid, "cudaMemcpy_v3020"}};
  Event oom;
  oom.kind = EventKind::Alloc;
  oom.seq = 1;
  oom.tid = 1;
  oom.stack_id = 7;
  MemoryEvent failed;
  failed.api = Api::cudaMalloc;
  failed.seq = 1;
  failed.result = 2;  // cudaErrorMemoryAllocation
  failed.key = 0;     // what the program's pointer held: nullptr
  failed.tid = 1;
  failed.stack_id = 7;
  oom.payload = failed;
  Event other_thread = call(EventKind::FailedCall, 2, kMemcpyCbid, 1, /*tid=*/2, 8);
  Event copy = call(EventKind::FailedCall, 3, kMemcpyCbid, 1, /*tid=*/1, 9);
  t.events = {oom, other_thread, copy};
  t.call_pointers = {{2, {0, 0x1000}}, {3, {0, 0x2000}}};
  Symbolizer symbolizer;
  StackResolver stacks(t, symbolizer);
  CallSiteJudge site_judge;
  FailureJudge failures(t, stacks, site_judge);
  const auto f = error_findings(t, {}, stacks, failures, {});
  REQUIRE(f.size() == 3);
  CHECK(f[0].api == "cudaMalloc");
  bool named = false;
  for (const auto& note : f[0].notes) named |= note.find("was then given to cudaMemcpy") != std::string::npos;
  CHECK(named);
  for (const auto& note : f[1].notes) CHECK(note.find("was then given") == std::string::npos);
}
