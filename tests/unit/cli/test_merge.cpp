// `cuaudit merge` on the report model: the same bug on several ranks is one finding with its ranks;
// a bug seen on different devices names none of them.
#include <doctest/doctest.h>

#include "merge.h"

using namespace cuaudit;

namespace {

report::Report rank_report(uint64_t pid, int device, uint64_t bytes) {
  report::Report r;
  report::Process p;
  p.pid = pid;
  p.devices = {{device, "NVIDIA H200", 0}};
  r.processes = {p};
  report::Finding f;
  f.kind = report::FindingKind::Leak;
  f.api = "cudaMalloc";
  f.bytes = bytes;
  f.count = 1;
  f.pid = pid;
  f.device = device;
  report::Frame frame;
  frame.function = "main";
  frame.file = "/src/rank.cu";
  f.stack = {frame};
  r.findings = {f};
  return r;
}

}  // namespace

TEST_CASE("a leak of every rank merges into one finding with its ranks, pids, bytes and no single device") {
  const report::Report merged =
      merge_reports({rank_report(10, 0, 1 << 20), rank_report(11, 1, 2 << 20)}, {"run-0", "run-1"});
  REQUIRE(merged.findings.size() == 1);
  const report::Finding& f = merged.findings[0];
  CHECK(f.ranks == std::vector<int>{0, 1});
  CHECK(f.pids == std::vector<uint64_t>{10, 11});
  CHECK(f.bytes == 3u << 20);
  CHECK_FALSE(f.device.has_value());
  REQUIRE(merged.processes.size() == 2);
  CHECK(merged.processes[1].rank == 1);
  CHECK(merged.processes[1].devices[0].ordinal == 1);
  CHECK(merged.summary.error_findings == 1);
  CHECK(merged.merged_from == std::vector<std::string>{"run-0", "run-1"});
}

TEST_CASE("the same bug on the same device keeps its device") {
  const report::Report merged = merge_reports({rank_report(10, 0, 1), rank_report(11, 0, 1)}, {"a", "b"});
  REQUIRE(merged.findings.size() == 1);
  CHECK(merged.findings[0].device == 0);
}
