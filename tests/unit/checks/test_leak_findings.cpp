#include <doctest/doctest.h>

#include "leak_findings.h"
#include "replay.h"
#include "report_model.h"
#include "sampled_stacks.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

std::vector<report::Finding> findings_of(const ProcessTrace& trace) {
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  return leak_findings(trace, replay(trace), stacks, testing::no_holders());
}

}  // namespace

TEST_CASE("leaks are grouped by allocation stack and API, biggest first") {
  SyntheticTrace t;
  for (uint64_t i = 0; i < 100; ++i) t.alloc(Api::cudaMalloc, 0x100000 + i * 0x1000, 4096, /*stack=*/5);
  t.alloc(Api::cudaMalloc, 0x900000, 100000, /*stack=*/6);
  t.alloc(Api::cudaMallocHost, 0xa00000, 64, /*stack=*/5);  // same stack, other API: its own group
  const auto findings = findings_of(t.end().trace());

  REQUIRE(findings.size() == 3);
  CHECK(findings[0].bytes == 409600);
  CHECK(findings[0].count == 100);
  CHECK(findings[0].api == "cudaMalloc");
  CHECK(findings[0].headline == "Leak of 409600 byte(s) in 100 allocation(s) (cudaMalloc) allocated from:");
  CHECK(findings[0].device == 0);
  CHECK(findings[1].bytes == 100000);
  CHECK(findings[2].api == "cudaMallocHost");
  CHECK_FALSE(findings[2].device.has_value());  // host memory has no device
  for (const auto& f : findings) {
    CHECK(f.kind == report::FindingKind::Leak);
    CHECK(f.severity == report::Severity::Error);
    CHECK(f.pid == 4242);
  }
}

TEST_CASE("a group spanning devices names none") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x1000, 8, 1, 0, 1, /*device=*/0).alloc(Api::cudaMalloc, 0x2000, 8, 1, 0, 2, /*device=*/1);
  const auto findings = findings_of(t.end().trace());
  REQUIRE(findings.size() == 1);
  CHECK_FALSE(findings[0].device.has_value());
}

TEST_CASE("reservations are reported but their bytes are not memory") {
  SyntheticTrace t;
  t.alloc(Api::cuMemCreate, 0x1, 2 << 20).alloc(Api::cuMemAddressReserve, 0x7f0000000000, 2 << 20, 3);
  const auto findings = findings_of(t.end().trace());
  REQUIRE(findings.size() == 2);
  const auto summary = report::summarize(findings);
  CHECK(summary.leaked_bytes == 2 << 20);
  CHECK(summary.leaked_allocations == 2);
}

TEST_CASE("leaks reclaimed by a context reset say so") {
  SyntheticTrace t;
  t.alloc(Api::cudaMalloc, 0x1000, 8, 1, 0, 3).destroy_context(3);
  const auto findings = findings_of(t.end().trace());
  REQUIRE(findings.size() == 1);
  REQUIRE(findings[0].notes.size() == 1);
  CHECK(findings[0].notes[0].find("context was destroyed") != std::string::npos);
}

TEST_CASE("watch mode: a sampled site's leak says what its samples stand for, the unsampled ones are all counted") {
  SyntheticTrace t;
  t.sampled_stacks(64 * 1024, 1 << 20);
  // 1,000 allocations of 4 KiB leak: a few were sampled (stack 5), the rest carry no stack.
  for (uint64_t i = 0; i < 1000; ++i) t.alloc(Api::cudaMalloc, 0x100000 + i * 0x1000, 4096, i % 16 == 0 ? 5 : 0);
  t.alloc(Api::cudaMalloc, 0x9000000, 4 << 20, 6);  // above the exact size: always sampled, counts once
  const auto findings = findings_of(t.end().trace());
  REQUIRE(findings.size() == 3);
  CHECK(findings[0].bytes == 4 << 20);
  bool exact_note = false;
  for (const std::string& n : findings[0].notes) exact_note |= n.find("sampled") != std::string::npos;
  CHECK_FALSE(exact_note);  // an allocation above the exact size stands for itself alone
  // What was seen without a stack is counted in full and said to be unsampled.
  const report::Finding& unsampled = findings[1];
  CHECK(unsampled.bytes == 4096 * (1000 - 63));
  CHECK(unsampled.count == 1000 - 63);
  REQUIRE_FALSE(unsampled.notes.empty());
  CHECK(unsampled.notes.front().find("stacks were not sampled") != std::string::npos);
  // The 63 sampled ones (p = 1 - exp(-4096/65536) = 0.0606 each) stand for about 1,040 allocations.
  const report::Finding& sampled = findings[2];
  CHECK(sampled.count == 63);
  REQUIRE_FALSE(sampled.notes.empty());
  CHECK(sampled.notes.front().find(
            "the 63 sampled allocation(s) here stand for about 4.1 MiB in about 1040 allocation(s)") !=
        std::string::npos);
}

TEST_CASE("watch mode's notes say how the stacks were sampled and what is exact") {
  const StackSampling sampled{512 * 1024, 1 << 20};
  CHECK(sampled_process_note(sampled) ==
        "recorded in watch mode: host stacks were sampled (one stack per 512.0 KiB allocated on average; allocations "
        "of 1.0 MiB or more always have theirs); allocations, releases, live and leaked bytes are exact, what each "
        "site holds is estimated from the sampled stacks");
  // Without an exact size, nothing is said of one.
  CHECK(sampled_site_note({4096, 0}).find("always") == std::string::npos);
  CHECK(sampled_site_note({4096, 0}).find("one stack per 4.0 KiB") != std::string::npos);
}
