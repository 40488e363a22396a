// The built-in held_by_allocator rules on what PyTorch and numba-cuda really left behind on the H200
// (tests/fixtures/torch-training-h200.json: the findings of tests/gpu/torch_training.py;
// numba-events-h200.json: of numba-cuda's own test module cudadrv.test_events).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "holders.h"
#include "json_report.h"
#include "library_handles.h"
#include "suppressions.h"

using namespace cuaudit;

namespace {

// The findings of a report the H200 wrote (read by json_report.h), judged afresh: only what a fresh
// analysis would know (the allocation's Python stack), as leaks before any judgement.
std::vector<report::Finding> recorded_findings(const std::string& fixture) {
  std::ifstream in(CUAUDIT_TEST_FIXTURES "/" + fixture);
  REQUIRE(in);
  std::vector<report::Finding> out = report::report_from_json(nlohmann::json::parse(in)).findings;
  for (report::Finding& f : out) {
    f.related.erase(std::remove_if(f.related.begin(), f.related.end(),
                                   [](const report::RelatedStack& r) { return r.role != report::RelatedRole::Python; }),
                    f.related.end());
    f.suppressed = false;
  }
  return out;
}

std::vector<report::Finding> recorded_torch_findings() {
  std::vector<report::Finding> out = recorded_findings("torch-training-h200.json");
  for (report::Finding& f : out) f.related.clear();
  return out;
}

// What the leak check does as it makes each finding: ask who holds it.
void judge_as_made(std::vector<report::Finding>& findings, Suppressions& rules) {
  const std::vector<PathMapping> no_paths;
  Holders holders(rules, no_paths);
  for (report::Finding& f : findings) {
    if (auto holder = holders.held(f.kind, Owner{}, f.stack, f.related, f.bytes))
      describe_held(f, *holder, f.kind == report::FindingKind::ResourceLeak);
  }
}

}  // namespace

TEST_CASE("everything PyTorch holds on purpose at exit is held_by_allocator, never gating") {
  auto findings = recorded_torch_findings();
  REQUIRE(findings.size() == 11);
  for (report::Finding& f : findings) {  // as they were before any judgement
    f.kind = report::FindingKind::Leak;
    f.severity = report::Severity::Error;
  }
  Suppressions s;
  s.load_text(builtin_allocator_rules(), "builtin", true);
  judge_as_made(findings, s);  // PyTorch's cuBLAS handles are the framework's too
  judge_library_handles(findings);
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
  CHECK(by_allocator["PyTorch's CUDA caching allocator"] == 4);
  CHECK(by_allocator["PyTorch pinned-memory caching allocator"] == 1);
  const auto by_handles = std::count_if(findings.begin(), findings.end(), [](const report::Finding& f) {
    return f.headline.rfind("Held by cuBLAS handle workspace:", 0) == 0 &&
           f.notes.back().find("PyTorch created this cuBLAS handle") == 0;
  });
  CHECK(by_handles == 6);
  CHECK(findings[2].headline.rfind("Held by PyTorch's CUDA caching allocator: 33554432 byte(s)", 0) == 0);
}

TEST_CASE("what numba-cuda's memory manager holds at exit (its deferred frees) is held_by_allocator") {
  auto findings = recorded_findings("numba-events-h200.json");
  REQUIRE(findings.size() == 3);
  for (report::Finding& f : findings) {
    f.kind = report::FindingKind::Leak;
    f.severity = report::Severity::Error;
    f.headline.clear();
  }
  Suppressions s;
  s.load_text(builtin_allocator_rules(), "builtin", true);
  judge_as_made(findings, s);
  for (const auto& f : findings) {
    CHECK(f.kind == report::FindingKind::HeldByAllocator);
    CHECK(f.headline.rfind("Held by numba-cuda memory manager:", 0) == 0);
  }
  // Without the Python stack (the allocation was made in numba's driver module) it is a leak.
  auto bare = recorded_findings("numba-events-h200.json");
  for (report::Finding& f : bare) {
    f.kind = report::FindingKind::Leak;
    f.related.clear();
  }
  Suppressions again;
  again.load_text(builtin_allocator_rules(), "builtin", true);
  judge_as_made(bare, again);
  CHECK(bare.front().kind == report::FindingKind::Leak);
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
  judge_as_made(findings, s);
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

TEST_CASE("a keep rule that matches an allocator's frames leaves its memory held_by_allocator") {
  report::Frame frame;
  frame.function = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(AllocParams&)";
  Suppressions s;
  s.load_text("keep:CUDACachingAllocator\n", "ours.supp");  // before the built-in rules, as --keep-only is
  s.load_text(builtin_allocator_rules(), "builtin", true);
  const std::vector<PathMapping> none;
  Holders holders(s, none);
  const auto holder = holders.held(report::FindingKind::Leak, Owner{}, {frame}, {}, 64);
  REQUIRE(holder);
  CHECK(holder->allocator == "PyTorch's CUDA caching allocator");
  CHECK(s.rules()[0].hits == 0);  // it counts what it keeps when the findings are judged, not holders
}

TEST_CASE("a suppression written before an allocator rule wins, rules match the paths as the report maps them") {
  report::Frame frame;
  frame.function = "Arena::grow(unsigned long)";
  frame.file = "/build/src/arena.cu";
  std::vector<report::Frame> stack = {frame};
  Suppressions s;
  s.load_text("leak:^Arena::grow\nheld_by_allocator:our arena:Arena::grow\nheld_by_allocator:mapped:^src/\n",
              "ours.supp");
  const std::vector<PathMapping> none;
  Holders holders(s, none);
  CHECK_FALSE(holders.held(report::FindingKind::Leak, Owner{}, stack, {}, 64));  // the leak: rule comes first
  CHECK(s.rules()[0].hits == 0);                                                 // counted when it suppresses
  stack[0].function = "grow_arena()";
  const std::vector<PathMapping> paths = {{"/build", ""}};
  Holders mapped(s, paths);
  const auto holder = mapped.held(report::FindingKind::Leak, Owner{}, stack, {}, 64);
  REQUIRE(holder);
  CHECK(holder->allocator == "mapped");
  CHECK(s.rules()[2].hits == 1);
  CHECK(s.rules()[2].bytes == 64);
  CHECK_FALSE(mapped.held(report::FindingKind::DoubleFree, Owner{}, stack, {}, 64));  // only leaks are held
}
