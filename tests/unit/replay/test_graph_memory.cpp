// Graph memory nodes, IPC and imported memory, and resources, replayed from synthetic traces.
#include <doctest/doctest.h>

#include <algorithm>

#include "leak_findings.h"
#include "release_findings.h"
#include "replay.h"
#include "report_model.h"
#include "shared_memory_findings.h"
#include "symbolizer.h"
#include "synthetic_trace.h"

using namespace cuaudit;
using cuaudit::testing::SyntheticTrace;

namespace {

constexpr uint64_t kGraph = 0x7000, kExec = 0x8000, kAddr = 0x7f0000000000;

std::vector<report::Finding> leaks_of(const ProcessTrace& trace) {
  Symbolizer symbolizer;
  StackResolver stacks(trace, symbolizer);
  return leak_findings(trace, replay(trace), stacks, testing::no_holders());
}

bool has_note(const report::Finding& f, const std::string& text) {
  return std::any_of(f.notes.begin(), f.notes.end(), [&](const std::string& n) { return n.find(text) != n.npos; });
}

}  // namespace

TEST_CASE("a graph that allocates and never frees leaks at its node's stack, with its launches") {
  SyntheticTrace t;
  t.graph_node(kGraph, kAddr, 1 << 20, true, Api::cudaGraphAddMemAllocNode, /*stack=*/9)
      .instantiate(kExec, kGraph, trace::kGraphAutoFreeOnLaunch);
  for (int i = 0; i < 10; ++i) t.launch_graph(kExec);
  const ProcessTrace& trace = t.end().trace();
  const ReplayResult r = replay(trace);
  REQUIRE(r.leaks.size() == 1);  // auto-free on launch: each launch releases the last one's memory
  CHECK(r.leaks[0].allocation.stack_id == 9);
  CHECK(r.leaks[0].allocation.graph_launches == 10);
  const auto findings = leaks_of(trace);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].api == "cudaGraphAddMemAllocNode");
  CHECK(findings[0].bytes == (1 << 20));
  CHECK(findings[0].message.find("graph memory") != std::string::npos);
  CHECK(has_note(findings[0], "the graph was launched 10 time(s)"));
}

TEST_CASE("a graph that frees what it allocates, or whose memory is freed after the launch, is clean") {
  SyntheticTrace inside;
  inside.graph_node(kGraph, kAddr, 4096, true, Api::cudaMallocAsyncCaptured)
      .graph_node(kGraph, kAddr, 0, false, Api::cudaFreeAsyncCaptured)
      .instantiate(kExec, kGraph);
  for (int i = 0; i < 5; ++i) inside.launch_graph(kExec);
  const ReplayResult r = replay(inside.end().trace());
  CHECK(r.leaks.empty());
  CHECK(r.release_findings.empty());
  CHECK(r.unmatched_releases == 0);

  SyntheticTrace after;
  after.graph_node(kGraph, kAddr, 4096, true, Api::cudaGraphAddMemAllocNode)
      .instantiate(kExec, kGraph)
      .launch_graph(kExec)
      .release(Api::cudaFreeAsync, kAddr)
      .launch_graph(kExec)
      .release(Api::cudaFree, kAddr);
  const ReplayResult a = replay(after.end().trace());
  CHECK(a.leaks.empty());
  CHECK(a.release_findings.empty());
}

TEST_CASE("graph memory is not allocated until the graph runs, and failed launches allocate nothing") {
  SyntheticTrace t;
  t.graph_node(kGraph, kAddr, 4096, true, Api::cudaGraphAddMemAllocNode)
      .instantiate(kExec, kGraph)
      .launch_graph(kExec, /*result=*/1)
      .release(Api::cudaFree, kAddr, /*result=*/1);
  const ReplayResult r = replay(t.end().trace());
  CHECK(r.leaks.empty());
  REQUIRE(r.release_findings.size() == 1);
  CHECK(r.release_findings[0].problem == ReleaseProblem::Invalid);
}

TEST_CASE("releasing memory the graph's own free node already released is a double free naming the node") {
  SyntheticTrace t;
  t.graph_node(kGraph, kAddr, 4096, true, Api::cudaGraphAddMemAllocNode)
      .graph_node(kGraph, kAddr, 0, false, Api::cudaGraphAddMemFreeNode, /*stack=*/8)
      .instantiate(kExec, kGraph)
      .launch_graph(kExec)
      .release(Api::cudaFree, kAddr, /*result=*/1);
  const ReplayResult r = replay(t.end().trace());
  REQUIRE(r.release_findings.size() == 1);
  CHECK(r.release_findings[0].problem == ReleaseProblem::Double);
  CHECK(r.release_findings[0].first_release->api == Api::cudaGraphAddMemFreeNode);
  CHECK(r.release_findings[0].first_release->stack_id == 8);
}

TEST_CASE("a graph's free node releases stream-ordered memory at its launch") {
  SyntheticTrace t;
  t.alloc(Api::cudaMallocAsync, kAddr, 4096)
      .graph_node(kGraph, kAddr, 0, false, Api::cudaGraphAddMemFreeNode)
      .instantiate(kExec, kGraph);
  CHECK(replay(SyntheticTrace(t).end().trace()).leaks.size() == 1);  // never launched: still live
  t.launch_graph(kExec);
  const ReplayResult r = replay(t.end().trace());
  CHECK(r.leaks.empty());
  CHECK(r.release_findings.empty());
}

TEST_CASE("a destroyed graph's nodes do not follow its handle to the next graph") {
  SyntheticTrace t;
  t.graph_node(kGraph, kAddr, 4096, true, Api::cudaGraphAddMemAllocNode)
      .destroy_graph(kGraph)
      .instantiate(kExec, kGraph)  // a new graph at the same handle, without memory nodes
      .launch_graph(kExec);
  CHECK(replay(t.end().trace()).leaks.empty());
}

TEST_CASE("a kernel node given graph memory is not judged by a check made before the memory existed") {
  SyntheticTrace t;
  t.graph_node(kGraph, kAddr, 4096, true, Api::cudaMallocAsyncCaptured)
      .launch_param("k(float*)", 0, kAddr + 256, trace::LaunchProblem::NotAccessible)
      .launch_param("k(float*)", 0, 0xdead0000, trace::LaunchProblem::NotAccessible);
  const ReplayResult r = replay(t.end().trace());
  REQUIRE(r.launch_params.size() == 1);
  CHECK(r.launch_params[0].launch.launch_param().value == 0xdead0000);
}

TEST_CASE("resources never destroyed are resource leaks naming the missing destroy call") {
  SyntheticTrace t;
  for (uint64_t i = 0; i < 3; ++i) t.alloc(Api::cudaStreamCreate, 0x5000 + i * 16, 0, /*stack=*/4);
  t.alloc(Api::cudaEventCreate, 0x6000, 0, /*stack=*/5).release(Api::cudaEventDestroy, 0x6000);
  // Texture and surface objects are small integers: the same value in both is not a mismatch.
  t.alloc(Api::cudaCreateTextureObject, 1, 0).alloc(Api::cudaCreateSurfaceObject, 1, 0);
  t.release(Api::cudaDestroySurfaceObject, 1).release(Api::cudaDestroyTextureObject, 1);
  const ProcessTrace& trace = t.end().trace();
  CHECK(replay(trace).release_findings.empty());
  const auto findings = leaks_of(trace);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == report::FindingKind::ResourceLeak);
  CHECK(findings[0].count == 3);
  CHECK(findings[0].bytes == 0);
  CHECK(findings[0].headline ==
        "Leak of 3 stream(s) (cudaStreamCreate), never destroyed with cudaStreamDestroy, created at:");
}

TEST_CASE("an IPC mapping closed with cudaFree is a mismatched free, one never closed is a leak of the importer") {
  SyntheticTrace t;
  t.alloc(Api::cudaIpcOpenMemHandle, kAddr, 1 << 20).release(Api::cudaFree, kAddr, /*result=*/1);
  t.alloc(Api::cuIpcOpenMemHandle, kAddr + (8 << 20), 4096);
  const ProcessTrace& trace = t.end().trace();
  const ReplayResult r = replay(trace);
  REQUIRE(r.release_findings.size() == 1);
  CHECK(r.release_findings[0].problem == ReleaseProblem::Mismatched);
  const auto findings = leaks_of(trace);
  REQUIRE(findings.size() == 2);
  for (const auto& f : findings) {
    CHECK(f.bytes == 0);  // the exporter's memory
    CHECK(has_note(f, "memory of another process"));
  }
  const auto driver = std::find_if(findings.begin(), findings.end(),
                                   [](const report::Finding& f) { return f.api == "cuIpcOpenMemHandle"; });
  REQUIRE(driver != findings.end());
  CHECK(driver->headline ==
        "Leak of 1 mapping(s) of another process's memory (4096 byte(s), cuIpcOpenMemHandle) never closed, opened at:");
  CHECK(right_release_for(Api::cudaIpcOpenMemHandle) == "cudaIpcCloseMemHandle");
  CHECK(right_release_for(Api::cudaMemPoolImportPointer) == "cudaFree");

  SyntheticTrace pool;
  pool.alloc(Api::cudaMemPoolImportPointer, kAddr, 4096).release(Api::cudaFreeAsync, kAddr);
  CHECK(replay(pool.end().trace()).release_findings.empty());
}

TEST_CASE("an exporter releasing memory another traced process still has open is warned about") {
  constexpr uint64_t kHandle = 0xabcdef;
  SyntheticTrace exporter;
  exporter.pid(100).alloc(Api::cudaMalloc, kAddr, 4096).exported(kAddr, kHandle).wait(1'000'000);
  SyntheticTrace importer;
  importer.pid(200).wait(500'000).alloc(Api::cudaIpcOpenMemHandle, 0x9000000, 4096).imported(kHandle);
  SyntheticTrace early_closer(importer);
  early_closer.release(Api::cudaIpcCloseMemHandle, 0x9000000);
  exporter.release(Api::cudaFree, kAddr);  // after the import opened (1 ms in)
  importer.wait(2'000'000).release(Api::cudaIpcCloseMemHandle, 0x9000000);

  Symbolizer symbolizer;
  const ProcessTrace& ex = exporter.end().trace();
  StackResolver stacks(ex, symbolizer);
  {
    const SharedMemoryImports imports({shared_memory_use(ex), shared_memory_use(importer.end().trace())});
    const auto findings = shared_memory_findings(shared_memory_use(ex), imports, stacks);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].kind == report::FindingKind::FreedWhileImported);
    CHECK(findings[0].severity == report::Severity::Warning);
    CHECK(findings[0].pid == 100);
    CHECK(findings[0].api == "cudaFree");
    CHECK(findings[0].message.find("process 200 had opened it with cudaIpcOpenMemHandle") != std::string::npos);
  }
  const SharedMemoryImports closed_first({shared_memory_use(ex), shared_memory_use(early_closer.end().trace())});
  CHECK(shared_memory_findings(shared_memory_use(ex), closed_first, stacks).empty());
}
