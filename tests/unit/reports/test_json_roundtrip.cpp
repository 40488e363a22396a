// The JSON reader is the exact inverse of the writer: a report written and read back is the same
// report, field for field, so baselines, diff and merge see what a fresh analysis saw.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "fingerprint.h"
#include "json_report.h"

using namespace cuaudit::report;

namespace {

Frame frame(const char* function, const char* file, int line, uint64_t pc) {
  Frame f;
  f.function = function;
  f.file = file;
  f.line = line;
  f.module = "/src/app";
  f.pc = pc;
  return f;
}

// Every field of the model set to something other than its default.
Report everything() {
  Report r;
  r.tool_version = "9.9.9";
  Process p;
  p.pid = 11;
  p.parent_pid = 10;
  p.command = {"./app", "--n", "3"};
  p.signal = "SIGSEGV";
  p.tracked = false;
  p.notes = {"a note"};
  p.allocations = 5;
  p.releases = 4;
  p.rank = 2;
  p.seconds = 12.5;
  r.processes = {p};
  Finding f;
  f.kind = FindingKind::MisalignedParam;
  f.severity = Severity::Warning;
  f.api = "cudaLaunchKernel";
  f.bytes = 64;
  f.count = 3;
  f.pid = 11;
  f.device = 1;
  f.headline = "Misaligned kernel parameter: ...";
  f.message = "parameter 0 ...";
  f.notes = {"note one", "note two"};
  f.address = 0x7004;
  f.result = "cudaErrorInvalidValue";
  f.suppressed = true;
  f.stack = {frame("fill<int4>(int4*, int)", "/src/app.cu", 12, 0x401000), frame("main", "/src/app.cu", 30, 0x401100)};
  f.stack[0].mangled = "_Z4fillI4int4EvPT_i";
  f.omitted_frames = 7;
  f.related = {{RelatedRole::FirstRelease, "cudaFree", "first released by cudaFree at:", {frame("a", "b.cu", 1, 2)}},
               {RelatedRole::Holder, "cudaMalloc", "held 1.0 GiB in 1 allocation(s):", {frame("c", "d.cu", 5, 6)}},
               {RelatedRole::Python, "", "Python stack:", {frame("<module>", "t.py", 4, 0)}}};
  f.related[1].omitted_frames = 3;
  f.parameter = KernelParameter{"fill<int4>(int4*, int)", 0, "int4*", 16, 4};
  f.baseline = BaselineStatus::StillPresent;
  f.at = 1.25;
  f.out_of_memory = OutOfMemoryState{1ull << 30,
                                     80ull << 30,
                                     512ull << 20,
                                     79ull << 30,
                                     {{"device", 79ull << 30}},
                                     2ull << 20,
                                     1ull << 20,
                                     std::nullopt,
                                     60ull << 30,
                                     58ull << 30,
                                     1ull << 30,
                                     "the program's own allocations filled the device"};
  f.churn = ChurnStats{100000, 30000, 8200000000ull, 0.61};
  f.growth = GrowthStats{7200, 10, 60, 1 << 20, 9 << 20, "PyTorch's CUDA caching allocator"};
  FragmentationStats g;
  g.pool = "NVTX heap \"arena\"", g.trigger = "stretch", g.at = 2.5, g.requested = 3 << 20;
  g.reserved = 64 << 20, g.used = 40 << 20, g.free = 24 << 20, g.largest_free = 1 << 20, g.ratio = 1.0 - 1.0 / 24;
  g.grew_by = 16 << 20, g.misses = 3, g.request_sizes = {3 << 20, 2 << 20};
  g.stretch_from = 1.5, g.stretch_seconds = 4.25;
  g.picture.sites = {{"cudaMalloc", 4096, 2, frame("keep", "k.cu", 9, 1)}, {"cudaMalloc", 512, 1, std::nullopt}};
  g.picture.segments = {{64 << 20, {{0, 2048, 0}, {4096, 512, 1}, {8192, 2048, 0}, {1 << 20, 512, -1}}}};
  g.picture.truncated = true;
  f.fragmentation = g;
  f.ranks = {0, 2};
  f.pids = {11, 31};
  r.findings = {f};
  r.summary = {64, 3, 1, 1};
  r.notes = {"run note"};
  r.nothing_tracked = true;
  r.incomplete = true;
  r.suppressions = {{"leak:upload", "app.supp", 2, 1, 4096}};
  r.unchecked = {{FindingKind::ResourceLeak, "recorded without --track-resources"}};
  r.baseline = BaselineResult{"old.json", 1, 2, {"leak cudaMalloc at step (app.cu)"}};
  r.timeline.samples = {
      {0.5, 11, 0, 1 << 20, 2 << 20, 4096, {{"device", 4096}}, 8192, 4096, 16384, 8192, 2048},
      {0.6, 11, 0, 1 << 20, 2 << 20, 4096, {{"device", 4096}}, std::nullopt, std::nullopt, std::nullopt, std::nullopt}};
  r.timeline.peaks = {
      {11, 0, 0.5, 1 << 20, 4096, {{"device", 4096}}, {{"cudaMalloc", 4096, 1, {frame("s", "s.cu", 3, 4)}}}}};
  r.timeline.pool_series = {{11,
                             "CuPy's memory pool",
                             {0.5, 0.6},
                             {1 << 20, 1 << 20},
                             {4096, 8192},
                             {1044480, 1040384},
                             {1044480, 1040384},
                             {1044000, 1040000}}};
  r.merged_from = {"rank0.json", "rank1.json", "rank2.json"};
  return r;
}

}  // namespace

TEST_CASE("a report read back from its JSON is the same report") {
  const Report original = everything();
  const nlohmann::json written = report_to_json(original);
  const Report read = report_from_json(written);
  // Compared through the writer: every field the model has is in the JSON.
  CHECK(report_to_json(read) == written);
  CHECK(read.findings[0].kind == FindingKind::MisalignedParam);
  CHECK(read.findings[0].related[2].role == RelatedRole::Python);
  CHECK(read.findings[0].related[1].omitted_frames == 3);
  REQUIRE(read.unchecked.size() == 1);
  CHECK(read.unchecked[0].kind == FindingKind::ResourceLeak);
  CHECK(read.findings[0].out_of_memory->verdict == "the program's own allocations filled the device");
  CHECK_FALSE(read.findings[0].out_of_memory->other_processes);
  CHECK(read.findings[0].churn->pairs == 100000);
  REQUIRE(read.findings[0].growth);
  CHECK(read.findings[0].growth->end_bytes == 9 << 20);
  CHECK(read.findings[0].growth->site == "PyTorch's CUDA caching allocator");
  REQUIRE(read.findings[0].fragmentation);
  CHECK(read.findings[0].fragmentation->request_sizes == std::vector<uint64_t>{3 << 20, 2 << 20});
  CHECK(read.findings[0].fragmentation->picture.segments[0].blocks[3].site == -1);
  CHECK(read.findings[0].fragmentation->picture.sites[0].at->function == "keep");
  CHECK(read.findings[0].address == 0x7004u);
  CHECK(read.findings[0].parameter->offset == 4u);
  CHECK(read.processes[0].rank == 2);
  CHECK(read.findings[0].omitted_frames == 7);
  // And through the text, which reads fields the JSON writer may not.
  CHECK(render_json(read) == render_json(original));
}

TEST_CASE("a minimal report reads with defaults, a wrong one is refused naming the field") {
  const Report minimal = report_from_json(nlohmann::json{{"schema", kSchema}});
  CHECK(minimal.findings.empty());
  CHECK(minimal.processes.empty());
  CHECK_THROWS_AS(report_from_json(nlohmann::json{{"schema", "other"}}), ReportFormatError);
  nlohmann::json bad = report_to_json(everything());
  bad["findings"][0]["kind"] = "leek";
  CHECK_THROWS_WITH_AS(report_from_json(bad), doctest::Contains("findings[0].kind"), ReportFormatError);
  bad = report_to_json(everything());
  bad["findings"][0]["bytes"] = 1.07375e42;  // found by fuzzing: out of range for an integer
  CHECK_THROWS_WITH_AS(report_from_json(bad), doctest::Contains("findings[0].bytes"), ReportFormatError);
  bad = report_to_json(everything());
  bad["findings"][0]["stack"][0]["line"] = "twelve";
  CHECK_THROWS_WITH_AS(report_from_json(bad), doctest::Contains("findings[0].stack[0]"), ReportFormatError);
}

TEST_CASE("the fingerprint ignores addresses, lines and pids, and its hash is FNV-1a on every platform") {
  Finding a = everything().findings[0];
  Finding b = a;
  b.pid = 99;
  b.address = 0x9000;
  b.stack[0].line = 99;
  b.stack[0].pc = 0x1;
  b.stack[0].file = "/elsewhere/app.cu";  // the same file built in another checkout
  CHECK(finding_fingerprint(a) == finding_fingerprint(b));
  b.stack[0].function = "fill<int2>(int2*, int)";
  CHECK(finding_fingerprint(a) != finding_fingerprint(b));
  CHECK(finding_fingerprint(a) ==
        "misaligned_param|cudaLaunchKernel|cudaErrorInvalidValue|fill<int4>(int4*, int)#0|"
        "fill<int4>(int4*, int)@app.cu;main@app.cu;");
  // Published FNV-1a test vectors: the hash must never depend on the standard library.
  CHECK(stable_hash("") == 0xcbf29ce484222325ull);
  CHECK(stable_hash("a") == 0xaf63dc4c8601ec8cull);
  CHECK(stable_hash("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE("a report whose arrays are numbers or objects is refused with ReportFormatError, never a JSON exception") {
  for (const char* text : {R"({"schema":"cuaudit.report.v1","timeline":{"site_series":5}})",
                           R"({"schema":"cuaudit.report.v1","timeline":{"pool_series":{"a":1}}})",
                           R"({"schema":"cuaudit.report.v1","timeline":{"site_series":[5]}})"}) {
    CAPTURE(text);
    CHECK_THROWS_AS(report_from_json(nlohmann::json::parse(text)), ReportFormatError);
  }
}

TEST_CASE("frames without symbols are told apart by their module and offset, not all the same") {
  Finding a;
  a.kind = FindingKind::Leak;
  a.api = "cudaMalloc";
  Frame unnamed;
  unnamed.module = "/opt/lib/libstripped.so";
  unnamed.module_offset = 0x1234;
  unnamed.pc = 0x7f0000001234;
  a.stack = {unnamed};
  Finding b = a;
  b.stack[0].pc = 0x7f1111111234;  // another run: another load address, the same code
  b.stack[0].module = "/other/place/libstripped.so";
  CHECK(finding_fingerprint(a) == finding_fingerprint(b));
  CHECK(finding_fingerprint(a) == "leak|cudaMalloc||libstripped.so+0x1234;");
  b.stack[0].module_offset = 0x5678;  // another allocation site in the same library
  CHECK(finding_fingerprint(a) != finding_fingerprint(b));
  // The offset goes through JSON (diff and merge read reports).
  Report r;
  r.findings = {a};
  CHECK(report_from_json(report_to_json(r)).findings[0].stack[0].module_offset == 0x1234);
  CHECK(describe_finding(a) == "leak cudaMalloc at libstripped.so+0x1234");
}

TEST_CASE("frames in no module are told apart by their offset in the page, which survives ASLR") {
  Finding a;
  a.kind = FindingKind::Leak, a.api = "cudaMalloc";
  Frame jit;
  jit.pc = 0x7f0000001234;  // JIT code: no module, no symbol
  a.stack = {jit};
  Finding moved = a;
  moved.stack[0].pc = 0x7f5555555234;  // the same code in another run
  CHECK(finding_fingerprint(a) == finding_fingerprint(moved));
  Finding other = a;
  other.stack[0].pc = 0x7f0000001660;  // another site
  CHECK(finding_fingerprint(a) != finding_fingerprint(other));
}
