// Writes HTML reports for the browser test that no recorded run provides: N findings and S timeline
// samples (to check that the page stays responsive), including names a hostile or unlucky program
// could produce. The timeline rises and falls in two phases; the second (3 GiB at 6 s) is the peak.
// Usage: html_fixture N FILE [S]
//        html_fixture pools FILE   one pool's series and a fragmentation finding with its segments, a device heap's,
//        migrations
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

#include "html_report.h"

using namespace cuaudit::report;

const char* const kLongSignature =
    "void at::native::(anonymous namespace)::cpu_kernel_vec<at::native::(anonymous namespace)::add_kernel("
    "at::TensorIteratorBase&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda(float, float)#1}, "
    "at::native::(anonymous namespace)::add_kernel(at::TensorIteratorBase&, c10::Scalar const&)::{lambda()#1}::"
    "operator()() const::{lambda(at::vec::CPU_CAPABILITY::Vectorized<float>, "
    "at::vec::CPU_CAPABILITY::Vectorized<float>)#2}>(at::TensorIteratorBase&, long, long)";

Finding finding(FindingKind kind, Severity severity, const char* api, uint64_t bytes, uint64_t pid, double at,
                std::string message) {
  Finding f;
  f.kind = kind;
  f.severity = severity;
  f.api = api;
  f.bytes = bytes;
  f.count = 1;
  f.pid = pid;
  f.device = 0;
  f.at = at;
  f.message = std::move(message);
  return f;
}

// A pool of two 4 MiB segments cut into holes over 4 s: its series, and the finding's picture (the
// first segment: site A's blocks with 256 KiB holes between them; the second half A, half B).
Report pools_report() {
  constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
  Report r;
  r.tool_version = "test";
  Process p;
  p.pid = 9;
  p.command = {"./pool_demo"};
  p.exit_code = 0;
  r.processes.push_back(p);
  PoolSeries series;
  series.pid = 9;
  series.pool = "pool 'arena' (NVTX heap)";
  for (int i = 0; i <= 40; ++i) {
    series.t.push_back(0.1 * i);
    series.reserved.push_back(8 * MiB);
    const uint64_t used = i < 10 ? static_cast<uint64_t>(i) * 768 * KiB : 6 * MiB;
    series.used.push_back(used);
    series.free.push_back(8 * MiB - used);
    series.holes.push_back(8 * MiB - used);
    series.largest_free.push_back(i < 10 ? 8 * MiB - used : 256 * KiB);
  }
  r.timeline.pool_series.push_back(series);
  // A --device-heap run's heap: used against its size after each launch, no largest free block.
  PoolSeries heap;
  heap.pid = 9;
  heap.pool = "device heap of device 0 (malloc in kernels)";
  heap.fragmentation_measured = false;
  for (int i = 0; i < 4; ++i) {
    heap.t.push_back(0.5 + i);
    heap.reserved.push_back(8 * MiB);
    heap.used.push_back((i + 1) * 4 * KiB);
    heap.free.push_back(8 * MiB - (i + 1) * 4 * KiB);
    heap.largest_free.push_back(0);
    heap.holes.push_back(0);
  }
  r.timeline.pool_series.push_back(heap);
  // Managed memory going back and forth on device 0: 4 MiB each way in alternate buckets.
  MigrationSeries moved;
  moved.pid = 9;
  for (int i = 0; i < 8; ++i) {
    moved.t.push_back(0.25 * (i + 1));
    moved.to_device.push_back(i % 2 ? 0 : 4 * MiB);
    moved.to_host.push_back(i % 2 ? 4 * MiB : 0);
  }
  r.timeline.migration_series.push_back(moved);
  // A stream-ordered pool on the same device: reserved and used from the samples, no ratio.
  for (int i = 0; i <= 20; ++i) {
    TimelineSample x;
    x.t = 0.2 * i, x.pid = 9, x.device = 0;
    x.used = 2 * 1024 * MiB, x.free = 78ull * 1024 * MiB;
    x.pool_reserved = 32 * MiB, x.pool_used = static_cast<uint64_t>(i % 5) * 4 * MiB;
    x.pool_reserved_high = 32 * MiB, x.pool_used_high = 16 * MiB;
    r.timeline.samples.push_back(x);
  }
  Finding f = finding(FindingKind::Fragmentation, Severity::Warning, "nvtxMemHeapRegister", 2 * MiB, 9, 2.0,
                      "pool 'arena' (NVTX heap) is cut into holes");
  FragmentationStats g;
  g.pool = series.pool, g.trigger = "stretch", g.at = 2.0;
  g.reserved = 8 * MiB, g.used = 6 * MiB, g.free = 2 * MiB, g.largest_free = 256 * KiB, g.ratio = 0.875;
  g.stretch_from = 1.0, g.stretch_seconds = 3.0;
  Frame keep, scratch;
  keep.function = "keep_forever(int)", keep.file = "/src/pool_demo.cu", keep.line = 30;
  scratch.function = "scratch(int)", scratch.file = "/src/pool_demo.cu", scratch.line = 41;
  g.picture.sites = {{"nvtxMemRegionsRegister", 5 * MiB, 12, keep}, {"nvtxMemRegionsRegister", MiB, 4, scratch}};
  SegmentPicture first{4 * MiB, {}}, second{4 * MiB, {{0, 2 * MiB, 0}, {2 * MiB, MiB, 1}}};
  for (uint64_t i = 0; i < 8; ++i) first.blocks.push_back({i * 512 * KiB + 256 * KiB, 256 * KiB, 0});
  g.picture.segments = {first, second};
  f.fragmentation = g;
  f.stack = {keep};
  r.findings.push_back(f);
  // The pool's request that failed at 3.5 s, its verdict from the measured holes.
  Finding oom = finding(FindingKind::OutOfMemory, Severity::Warning, "cudaMalloc", 3 * MiB, 9, 3.5,
                        "cudaMalloc could not allocate 3.0 MiB");
  OutOfMemoryState o;
  o.requested = 3 * MiB;
  o.verdict =
      "free memory was enough in total inside pool 'arena' (NVTX heap) (2.0 MiB in holes) but no hole was as large";
  oom.out_of_memory = o;
  oom.stack = {scratch};
  r.findings.push_back(oom);
  r.summary = summarize(r.findings);
  return r;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "pools") {
    std::ofstream(argv[2]) << render_html(pools_report(), "");
    return 0;
  }
  if (argc != 3 && argc != 4) return 2;
  const int n = std::atoi(argv[1]);
  const int samples = argc == 4 ? std::atoi(argv[3]) : 0;
  Report r;
  r.tool_version = "test";
  Process p;
  p.pid = 7;
  p.command = {"./app", "</script><script>window.__pwned = 1</script>"};
  p.exit_code = 0;
  r.processes.push_back(p);
  for (int i = 0; i < n; ++i) {
    Finding f;
    f.kind = i % 3 == 0 ? FindingKind::Leak : i % 3 == 1 ? FindingKind::DoubleFree : FindingKind::UncheckedError;
    f.severity = Severity::Error;
    f.api = "cudaMalloc";
    f.bytes = static_cast<uint64_t>(1000 + i);
    f.count = 1;
    f.pid = 7;
    f.message = i == 0 ? "<img src=x onerror=\"window.__pwned = 2\"> in fill<int4>" : "finding " + std::to_string(i);
    Frame fr;
    fr.pc = 0x1000 + static_cast<uint64_t>(i);
    // i == 1: a signature as long as PyTorch's, which must wrap instead of widening the page.
    fr.function = i == 0   ? "fill<int4>(int4*, int)</td><script>window.__pwned = 3</script>"
                  : i == 1 ? kLongSignature
                           : "site_" + std::to_string(i);
    fr.file = "/src/app.cu";
    fr.line = 10 + i % 50;
    f.stack = {fr};
    r.findings.push_back(f);
  }
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  for (int i = 0; i < samples; ++i) {
    const double t = 8.0 * i / samples;  // 0..8 s: up to 2 GiB at 2 s, down, up to 3 GiB at 6 s, down
    const double phase = t < 4 ? 2 * GiB * (1 - std::abs(t - 2) / 2) : 3 * GiB * (1 - std::abs(t - 6) / 2);
    TimelineSample x;
    x.t = t;
    x.pid = 7;
    x.device = 0;
    x.used = static_cast<uint64_t>(0.5 * GiB + phase);
    x.free = static_cast<uint64_t>(80 * GiB) - x.used;
    x.tracked = static_cast<uint64_t>(phase);
    r.timeline.samples.push_back(x);
  }
  if (samples) {
    DevicePeak peak;
    peak.pid = 7;
    peak.t = 6.0;
    peak.used = static_cast<uint64_t>(3.5 * GiB);
    peak.tracked = static_cast<uint64_t>(3 * GiB);
    PeakSite site;
    site.api = "cudaMalloc";
    site.bytes = static_cast<uint64_t>(3 * GiB);
    site.count = 3;
    Frame fr;
    fr.function = "phase_two(int)";
    fr.file = "/src/phases.cu";
    fr.line = 42;
    site.stack = {fr};
    peak.sites.push_back(site);
    r.timeline.peaks.push_back(peak);
    // The stacked chart: one site climbing through the run, one level, the rest together.
    SiteSeries series;
    series.pid = 7;
    for (int b = 0; b < 80; ++b) {
      series.t.push_back(0.1 * (b + 1));
      series.other.push_back(static_cast<uint64_t>(64) << 20);
    }
    SeriesSite climbing, level;
    climbing.api = "cudaMalloc";
    climbing.stack = {fr};
    level.api = "cudaMallocAsync";
    Frame level_frame = fr;
    level_frame.function = "steady(int)";
    level_frame.line = 7;
    level.stack = {level_frame};
    level.site = "RMM pool";  // named by the tool (site_labels.h), not by its innermost frame
    for (int b = 0; b < 80; ++b) {
      climbing.bytes.push_back(static_cast<uint64_t>(b) << 24);
      level.bytes.push_back(static_cast<uint64_t>(512) << 20);
    }
    series.sites = {climbing, level};
    r.timeline.site_series.push_back(series);
    // An allocation that failed at 6.5 s, and two churning sites (the churn table, biggest time first).
    Finding oom = finding(FindingKind::OutOfMemory, Severity::Warning, "cudaMalloc", static_cast<uint64_t>(GiB), 7, 6.5,
                          "cudaMalloc could not allocate 1.0 GiB: the program's own allocations filled the device");
    oom.stack = {fr};
    r.findings.push_back(oom);
    for (int i = 0; i < 2; ++i) {
      Finding churn;
      churn.kind = FindingKind::AllocationChurn;
      churn.severity = Severity::Info;
      churn.api = i ? "cudaMallocAsync" : "cudaMalloc";
      churn.bytes = 4096;
      churn.count = i ? 50000 : 100000;
      churn.pid = 7;
      churn.churn = ChurnStats{churn.count, 30000, i ? 100'000'000ull : 8'200'000'000ull, i ? 0.01 : 0.61};
      Frame site_frame;
      site_frame.function = i ? "async_step(int)" : "hot_loop(int)";
      site_frame.file = "/src/churn.cu";
      site_frame.line = 20 + i;
      churn.stack = {site_frame};
      r.findings.push_back(churn);
    }
  }
  r.summary = summarize(r.findings);
  std::ofstream(argv[2]) << render_html(r, "");  // no source excerpts
  return 0;
}
