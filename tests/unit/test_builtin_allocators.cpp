// The built-in held_by_allocator rules on what PyTorch really left behind on the H200
// (tests/fixtures/torch-training-h200.json: the findings of tests/gpu/torch_training.py).
#include <doctest/doctest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "json_report.h"
#include "library_handles.h"
#include "suppressions.h"

using namespace cuaudit;

namespace {

std::vector<report::Finding> recorded_torch_findings() {
  std::ifstream in(CUAUDIT_TEST_FIXTURES "/torch-training-h200.json");
  REQUIRE(in);
  // The report reader (json_report.h), on a report the H200 wrote.
  std::vector<report::Finding> out = report::report_from_json(nlohmann::json::parse(in)).findings;
  for (report::Finding& f : out) {  // judged afresh: only what a fresh analysis would know
    f.related.clear();
    f.suppressed = false;
  }
  return out;
}

}  // namespace

TEST_CASE("everything PyTorch holds on purpose at exit is held_by_allocator, never gating") {
  auto findings = recorded_torch_findings();
  REQUIRE(findings.size() == 11);
  for (report::Finding& f : findings) {  // as they were before any judgement
    f.kind = report::FindingKind::Leak;
    f.severity = report::Severity::Error;
  }
  judge_library_handles(findings);  // PyTorch's cuBLAS handles: the framework's
  Suppressions s;
  s.load_text(builtin_allocator_rules(), "builtin", true);
  s.apply(findings);
  std::map<std::string, uint64_t> by_allocator;
  for (const auto& f : findings) {
    CAPTURE(f.api);
    CHECK(f.kind == report::FindingKind::HeldByAllocator);
    CHECK(f.severity == report::Severity::Info);
    CHECK_FALSE(f.suppressed);
  }
  const auto summary = report::summarize(findings);
  CHECK(summary.error_findings == 0);
  CHECK(summary.leaked_bytes == 0);
  for (const auto& rule : s.rules()) by_allocator[rule.allocator] += rule.hits;
  CHECK(by_allocator["PyTorch CUDA caching allocator"] == 4);
  CHECK(by_allocator["PyTorch pinned-memory caching allocator"] == 1);
  const auto by_handles = std::count_if(findings.begin(), findings.end(), [](const report::Finding& f) {
    return f.headline.rfind("Held by cuBLAS handle workspace:", 0) == 0 &&
           f.notes.back().find("PyTorch created this cuBLAS handle") == 0;
  });
  CHECK(by_handles == 6);
  CHECK(findings[2].headline.rfind("Held by PyTorch CUDA caching allocator: 33554432 byte(s)", 0) == 0);
}

TEST_CASE("a program's own leak is not taken for an allocator's memory") {
  report::Finding f;
  f.kind = report::FindingKind::Leak;
  f.api = "cudaMalloc";
  report::Frame frame;
  frame.function = "train_step(Model&)";
  frame.file = "/src/train.cu";
  frame.module = "/src/train";
  f.stack = {frame};
  std::vector<report::Finding> findings = {f};
  Suppressions s;
  s.load_text(builtin_allocator_rules(), "builtin", true);
  s.apply(findings);
  CHECK(findings[0].kind == report::FindingKind::Leak);
}

TEST_CASE("users write their own allocator rules, and malformed ones are refused") {
  Suppressions s;
  s.load_text("held_by_allocator:our arena:Arena::grow\n", "ours.supp");
  REQUIRE(s.rules().size() == 1);
  CHECK(s.rules()[0].allocator == "our arena");
  CHECK(s.rules()[0].pattern == "Arena::grow");
  CHECK_THROWS_WITH(s.load_text("held_by_allocator:no pattern\n", "bad.supp"), doctest::Contains("bad.supp:1"));
}
