// --device-heap's judgement: device-side malloc and free replayed in the GPU's order, leaks grouped
// by device location and launch stack, double and invalid frees, NULL returns.
#include <doctest/doctest.h>

#include <algorithm>

#include "device_heap_findings.h"
#include "symbolizer.h"

using namespace cuaudit;
using trace::DeviceHeapCall;

namespace {

constexpr uint64_t kKernelPc = 0x7f0000010000;

struct HeapRun {
  ProcessTrace trace;
  uint64_t next_launch = 0;

  // A launch of `kernel` from host stack `stack`; returns its id.
  uint64_t launch(const std::string& kernel, uint64_t stack, uint64_t heap_bytes = 8 << 20) {
    DeviceHeapLaunchFact l;
    l.launch_id = ++next_launch;
    l.stack_id = stack;
    l.function_pc = kKernelPc;
    l.function_bytes = 0x800;
    l.heap_bytes = heap_bytes;
    l.device = 0;
    l.name = kernel;
    trace.device_heap_launches[l.launch_id] = l;
    return l.launch_id;
  }
  void malloc(uint64_t launch, uint64_t offset, uint64_t address, uint64_t bytes) {
    trace.device_heap_calls.push_back({launch, kKernelPc + offset, address, bytes, DeviceHeapCall::Malloc});
  }
  void free(uint64_t launch, uint64_t offset, uint64_t address) {
    trace.device_heap_calls.push_back({launch, kKernelPc + offset, address, 0, DeviceHeapCall::Free});
  }
};

std::vector<report::Finding> judge(const ProcessTrace& trace) {
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  return device_heap_findings(trace, stacks);
}

std::vector<report::Finding> of_kind(const std::vector<report::Finding>& all, report::FindingKind kind) {
  std::vector<report::Finding> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [kind](const report::Finding& f) { return f.kind == kind; });
  return out;
}

}  // namespace

TEST_CASE("nodes kept by every thread of four launches are one device_heap_leak at their device location") {
  HeapRun run;
  uint64_t address = 0x7e0000000000;
  for (int l = 0; l < 4; ++l) {
    const uint64_t id = run.launch("_Z10leak_nodesi", 7);
    for (int t = 0; t < 256; ++t, address += 16) run.malloc(id, 0x1f0, address, 16);
  }
  const auto findings = judge(run.trace);
  REQUIRE(findings.size() == 1);
  const report::Finding& f = findings[0];
  CHECK(f.kind == report::FindingKind::DeviceHeapLeak);
  CHECK(f.severity == report::Severity::Error);
  CHECK(f.count == 1024);
  CHECK(f.bytes == 16384);
  CHECK(f.address == 0x7e0000000000);
  CHECK(f.device == 0);
  REQUIRE(!f.notes.empty());
  CHECK(f.notes[0].find("leak_nodes(int)+0x1f0") != std::string::npos);
  CHECK(f.notes[0].find("launched 4 time(s)") != std::string::npos);
  CHECK(f.headline.find("1024 allocation(s) of 16 B") != std::string::npos);
}

TEST_CASE("a call whose kernel's line table is known names its source line beside the offset") {
  HeapRun run;
  const uint64_t id = run.launch("_Z10leak_nodesi", 7);
  run.malloc(id, 0x70, 0x7e0000000000, 16);
  run.trace.device_heap_lines[{"_Z10leak_nodesi", 0x70}] = "/src/lists.cu:19";
  const auto findings = judge(run.trace);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].headline.find("leak_nodes(int)+0x70 at /src/lists.cu:19") != std::string::npos);
}

TEST_CASE("the same device code launched from two host stacks is two leak sites, freed blocks are none") {
  HeapRun run;
  const uint64_t a = run.launch("_Z5buildv", 1), b = run.launch("_Z5buildv", 2), c = run.launch("_Z7scratchv", 3);
  run.malloc(a, 0x40, 0x1000, 32);
  run.malloc(b, 0x40, 0x2000, 48);
  run.malloc(c, 0x80, 0x3000, 64);
  run.free(c, 0xc0, 0x3000);
  run.free(c, 0xc0, 0);  // free(NULL) does nothing
  const auto leaks = of_kind(judge(run.trace), report::FindingKind::DeviceHeapLeak);
  REQUIRE(leaks.size() == 2);
  CHECK(leaks[0].bytes == 48);  // biggest first
  CHECK(leaks[1].bytes == 32);
}

TEST_CASE("a block freed twice is a double free, an address malloc never returned is an invalid free") {
  HeapRun run;
  const uint64_t id = run.launch("_Z10free_twicePv", 5);
  run.malloc(id, 0x40, 0x5000, 64);
  run.free(id, 0x90, 0x5000);
  run.free(id, 0x90, 0x5000);
  run.free(id, 0xd0, 0x9000);
  // An address handed out again after its free is live again: its next free is fine.
  run.malloc(id, 0x40, 0x5000, 64);
  run.free(id, 0x90, 0x5000);
  const auto findings = judge(run.trace);
  const auto twice = of_kind(findings, report::FindingKind::DeviceHeapDoubleFree);
  const auto invalid = of_kind(findings, report::FindingKind::DeviceHeapInvalidFree);
  REQUIRE(twice.size() == 1);
  CHECK(twice[0].count == 1);
  CHECK(twice[0].address == 0x5000);
  CHECK(twice[0].notes[0].find("free_twice(void*)+0x90") != std::string::npos);
  REQUIRE(invalid.size() == 1);
  CHECK(invalid[0].address == 0x9000);
  CHECK(of_kind(findings, report::FindingKind::DeviceHeapLeak).empty());
}

TEST_CASE("malloc returning NULL is device_heap_exhausted with the heap's size and the largest request") {
  HeapRun run;
  const uint64_t id = run.launch("_Z7exhaustPPv", 9, 8 << 20);
  run.malloc(id, 0x60, 0, uint64_t(1) << 30);
  run.malloc(id, 0x60, 0, 4096);
  const auto findings = judge(run.trace);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == report::FindingKind::DeviceHeapExhausted);
  CHECK(findings[0].severity == report::Severity::Warning);
  CHECK(findings[0].count == 2);
  CHECK(findings[0].bytes == uint64_t(1) << 30);
  CHECK(findings[0].message.find("the device heap is 8.0 MiB") != std::string::npos);
}

TEST_CASE("a call outside its kernel's code is placed by address, called from the kernel") {
  HeapRun run;
  const uint64_t id = run.launch("_Z4treev", 4);
  run.malloc(id, 0x10000, 0x7000, 16);  // in a device function the kernel called
  const auto findings = judge(run.trace);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].notes[0].find("device code at 0x7f0000020000, called from tree()") != std::string::npos);
}

TEST_CASE("a run without device-heap calls has no device-heap findings") {
  HeapRun run;
  run.launch("_Z5emptyv", 1);
  CHECK(judge(run.trace).empty());
}
