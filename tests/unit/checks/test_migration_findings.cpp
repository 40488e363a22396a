// Managed memory that migrates back and forth: CUPTI's unified-memory records attributed to the
// managed allocation that held their address then, and judged per allocation.
#include <doctest/doctest.h>

#include <algorithm>

#include "migration_findings.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;
using trace::MigrationKind;

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBuffer = 0x7f0000000000;

std::vector<report::Finding> judge(const ProcessTrace& trace, MigrationOptions options = {}) {
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  return migration_findings(trace, stacks, options);
}

// A loop that touches the buffer on the device, then on the host, `rounds` times.
SyntheticTrace ping_pong(int rounds, uint64_t bytes = 4 * kMiB) {
  SyntheticTrace t;
  t.alloc(Api::cudaMallocManaged, kBuffer, bytes, 11);
  for (int i = 0; i < rounds; ++i) {
    t.migration(MigrationKind::GpuPageFault, kBuffer, 3);
    t.migration(MigrationKind::HostToDevice, kBuffer, bytes).wait(1000);
    t.migration(MigrationKind::CpuPageFault, kBuffer, 0x401000);
    t.migration(MigrationKind::DeviceToHost, kBuffer, bytes).wait(1000);
  }
  t.release(Api::cudaFree, kBuffer);
  return t;
}

}  // namespace

TEST_CASE("managed memory going back and forth is a managed_migration at its allocation, with its figures") {
  const auto t = ping_pong(5);
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::ManagedMigration);
  CHECK(f.severity == report::Severity::Warning);
  CHECK(f.api == "cudaMallocManaged");
  CHECK(f.bytes == 4 * kMiB);
  CHECK(f.count == 4);  // five trips to the device: four came back after the host had the pages
  CHECK(f.address == kBuffer);
  CHECK(f.message.find("20.0 MiB to the device and 20.0 MiB to the host") != std::string::npos);
  CHECK(f.message.find("15 GPU and 5 CPU page fault(s)") != std::string::npos);
}

TEST_CASE("a buffer prefetched once, or read back once at the end, is not reported") {
  SyntheticTrace once;
  once.alloc(Api::cudaMallocManaged, kBuffer, 64 * kMiB);
  once.migration(MigrationKind::HostToDevice, kBuffer, 64 * kMiB);
  CHECK(judge(once.trace()).empty());
  once.migration(MigrationKind::DeviceToHost, kBuffer, 64 * kMiB);  // the result read on the host
  CHECK(judge(once.trace()).empty());
}

TEST_CASE("the thresholds: round trips and bytes") {
  CHECK(judge(ping_pong(2).trace(), {kMiB, 2}).empty());  // one round trip
  CHECK(judge(ping_pong(3).trace(), {kMiB, 2}).size() == 1);
  CHECK(judge(ping_pong(4, 64 * 1024).trace()).empty());  // 3 round trips of 512 KiB in all
  CHECK(judge(ping_pong(4, 64 * 1024).trace(), {kMiB / 2, 2}).size() == 1);
}

TEST_CASE("the driver's thrashing report is enough, with the bytes") {
  SyntheticTrace t;
  t.alloc(Api::cudaMallocManaged, kBuffer, 8 * kMiB);
  t.migration(MigrationKind::HostToDevice, kBuffer, 8 * kMiB);
  t.migration(MigrationKind::Thrashing, kBuffer, 8 * kMiB);
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].message.find("thrashing 1 time(s)") != std::string::npos);
}

TEST_CASE("a record goes to the allocation that held its address then, not a later one at the same address") {
  SyntheticTrace t;
  t.alloc(Api::cudaMallocManaged, kBuffer, 4 * kMiB, 11);
  for (int i = 0; i < 4; ++i) {
    t.migration(MigrationKind::HostToDevice, kBuffer + kMiB, kMiB);
    t.migration(MigrationKind::DeviceToHost, kBuffer + kMiB, kMiB);
  }
  t.release(Api::cudaFree, kBuffer);
  t.alloc(Api::cudaMallocManaged, kBuffer, 4 * kMiB, 12);  // the same address, later
  t.migration(MigrationKind::HostToDevice, kBuffer, 4 * kMiB);
  t.release(Api::cudaFree, kBuffer);
  t.alloc(Api::cudaMalloc, 0x500000000, 4 * kMiB);  // not managed: never a home for a record
  t.migration(MigrationKind::HostToDevice, 0x500000000, kMiB);
  Symbolizer symbolizer;
  StackResolver stacks(t.trace(), symbolizer);
  ManagedRanges ranges;
  replay(t.trace(), &ranges);
  REQUIRE(ranges.ranges().size() == 2);
  uint64_t unattributed = 0;
  const auto tallies = tally_migrations(t.trace().managed_migrations, ranges.ranges(), unattributed);
  CHECK(tallies[0].to_device == 4 * kMiB);
  CHECK(tallies[0].round_trips == 3);
  CHECK(tallies[1].to_device == 4 * kMiB);
  CHECK(tallies[1].round_trips == 0);
  CHECK(unattributed == 1);
  const auto findings = migration_findings(t.trace(), ranges, stacks, {});
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count == 3);
}

TEST_CASE("records handed over out of order are followed in the order they happened") {
  auto t = ping_pong(4);
  ProcessTrace shuffled = t.trace();
  std::reverse(shuffled.managed_migrations.begin(), shuffled.managed_migrations.end());
  const auto a = judge(t.trace()), b = judge(shuffled);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  CHECK(a[0].count == b[0].count);
  CHECK(a[0].message == b[0].message);
}

TEST_CASE("the kernels whose page faults pulled the buffer to the device are named, with their faults and runs") {
  SyntheticTrace t;
  t.alloc(Api::cudaMallocManaged, kBuffer, 4 * kMiB, 11);
  for (int i = 0; i < 5; ++i) {
    t.kernel_run("_Z5touchPfi", 800);  // faults inside its run: its own
    t.migration(MigrationKind::GpuPageFault, kBuffer, 3);
    t.migration(MigrationKind::HostToDevice, kBuffer, 4 * kMiB, 0, trace::MigrationCause::Coherence).wait(1000);
    t.migration(MigrationKind::CpuPageFault, kBuffer, 0x401000);
    t.migration(MigrationKind::DeviceToHost, kBuffer, 4 * kMiB).wait(1000);
  }
  t.kernel_run("_Z5touchPfi", 800, 1);  // another device: not the fault's
  t.migration(MigrationKind::GpuPageFault, kBuffer, 2);
  t.release(Api::cudaFree, kBuffer);
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  const std::string& message = findings[0].message;
  CHECK(message.find("`touch(float*, int)`: 15 GPU page fault(s), 20.0 MiB to the device, in 5 run(s)") !=
        std::string::npos);
  REQUIRE(!findings[0].notes.empty());
  CHECK(findings[0].notes.back().rfind("kernels whose page faults pulled it to the device: `touch", 0) == 0);
}

TEST_CASE("a prefetch the program asked for, and faults between kernels, are no kernel's") {
  SyntheticTrace t;
  t.alloc(Api::cudaMallocManaged, kBuffer, 4 * kMiB, 11);
  for (int i = 0; i < 3; ++i) {
    t.kernel_run("_Z4scalePf", 800);
    t.migration(MigrationKind::HostToDevice, kBuffer, 4 * kMiB, 0, trace::MigrationCause::User).wait(1000);
    t.migration(MigrationKind::GpuPageFault, kBuffer, 1).wait(1000);  // after the run ended
    t.migration(MigrationKind::DeviceToHost, kBuffer, 4 * kMiB).wait(1000);
  }
  t.release(Api::cudaFree, kBuffer);
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].message.find("kernels whose page faults") == std::string::npos);
}

TEST_CASE("kernels of two streams running at once are both named, the one with more faults first") {
  SyntheticTrace t;
  t.alloc(Api::cudaMallocManaged, kBuffer, 4 * kMiB, 11);
  for (int i = 0; i < 3; ++i) {
    t.kernel_run("producer", 5000, 0, 1).kernel_run("_Z8consumerPKf", 800, 0, 2);
    t.migration(MigrationKind::GpuPageFault, kBuffer, 4).wait(1000);  // both running
    t.migration(MigrationKind::GpuPageFault, kBuffer, 6).wait(1000);  // only the producer's
    t.migration(MigrationKind::HostToDevice, kBuffer, 4 * kMiB).wait(1000);
    t.migration(MigrationKind::DeviceToHost, kBuffer, 4 * kMiB).wait(3000);
  }
  t.release(Api::cudaFree, kBuffer);
  const auto findings = judge(t.trace());
  REQUIRE(findings.size() == 1);
  const std::string& m = findings[0].message;
  const size_t producer = m.find("`producer`: 30 GPU page fault(s)");
  const size_t consumer = m.find("`consumer(float const*)`: 12 GPU page fault(s)");
  CHECK(producer != std::string::npos);
  CHECK(consumer != std::string::npos);
  CHECK(producer < consumer);
}

TEST_CASE("a trace without kernels' runs says the kernels are not known") {
  const auto findings = judge(ping_pong(4).trace());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].notes.back() == "the kernels involved are not known: this trace has no record of kernels' runs");
}
