// Sites named by the user's code or their allocator in charts and one-line lists (issue 35).
#include <doctest/doctest.h>

#include "site_labels.h"

using namespace cuaudit;
using report::Frame;

namespace {

Frame native(std::string function, std::string file = "", int line = 0, std::string module = "/app/bin/app") {
  Frame f;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  f.module = std::move(module);
  return f;
}

Frame python(std::string file, int line) {
  Frame f = native("<module>", std::move(file), line, "python");
  return f;
}

Suppressions builtin_rules() {
  Suppressions rules;
  rules.load_text(builtin_allocator_rules(), "builtin", true);
  return rules;
}

}  // namespace

TEST_CASE(
    "a site is named by the user's Python line, its allocator, its source line, its function or its module, the line "
    "last") {
  const Suppressions rules = builtin_rules();
  CHECK(site_label(
            {python("/venv/lib/python3.12/site-packages/torch/nn/functional.py", 1723), python("/work/train.py", 19)},
            rules) == "train.py:19");
  CHECK(site_label({native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(Params&)", "",
                           0, "/venv/torch/lib/libc10_cuda.so"),
                    native("main")},
                   rules) == "PyTorch's CUDA caching allocator");
  CHECK(site_label({native("", "", 0, "/usr/lib/libcublas.so.13"), native("serve(int)", "/src/cublas_handles.cu", 17)},
                   rules) == "serve cublas_handles.cu:17");
  CHECK(site_label({native("cublasCreate_v2", "", 0, "/usr/lib/libcublas.so.13")}, rules) ==
        "cublasCreate_v2 (libcublas.so.13)");
  Frame bare = native("", "", 0, "/usr/lib/libcublasLt.so.13");
  bare.module_offset = 0x1f38ab;
  CHECK(site_label({bare}, rules) == "libcublasLt.so.13+0x1f38ab");
  CHECK(site_label({}, rules) == "no stack recorded");
  // CUDA memory a library took for a Python line: the library's, from that line.
  CHECK(site_label(
            {native("cublasCreate_v2", "", 0, "/usr/lib/libcublas.so.13"),
             python("/venv/lib/python3.12/site-packages/torch/nn/functional.py", 1723), python("/work/train.py", 19)},
            rules) == "cublasCreate_v2 (libcublas.so.13) from train.py:19");
}

TEST_CASE("sites that get one name are one site in the peak's list and the stacked chart") {
  const Suppressions rules = builtin_rules();
  const Frame segment = native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(Params&)",
                               "", 0, "/venv/torch/lib/libc10_cuda.so");
  report::Timeline t;
  report::DevicePeak peak;
  peak.sites = {{"cudaMalloc", 64, 1, {segment, native("f")}, ""},
                {"cudaMalloc", 100, 2, {native("upload(int)", "/src/app.cu", 28)}, ""},
                {"cudaMalloc", 96, 3, {segment, native("g")}, ""}};
  t.peaks.push_back(peak);
  report::SiteSeries series;
  series.t = {1, 2};
  series.sites = {{"cudaMalloc", {10, 20}, {segment, native("f")}, ""},
                  {"cudaMalloc", {30, 25}, {native("upload(int)", "/src/app.cu", 28)}, ""},
                  {"cudaMalloc", {15, 15}, {segment, native("g")}, ""}};
  t.site_series.push_back(series);
  label_timeline_sites(t, rules);
  REQUIRE(t.peaks[0].sites.size() == 2);
  CHECK(t.peaks[0].sites[0].site == "PyTorch's CUDA caching allocator");
  CHECK(t.peaks[0].sites[0].bytes == 160);
  CHECK(t.peaks[0].sites[0].count == 4);
  CHECK(t.peaks[0].sites[1].site == "upload app.cu:28");
  REQUIRE(t.site_series[0].sites.size() == 2);
  CHECK(t.site_series[0].sites[0].site == "PyTorch's CUDA caching allocator");
  CHECK(t.site_series[0].sites[0].bytes == std::vector<uint64_t>{25, 35});
  CHECK(t.site_series[0].sites[1].site == "upload app.cu:28");
}

TEST_CASE("a growth finding's site gets the name its live series has: the allocator a rule names, not its frame") {
  const Suppressions rules = builtin_rules();
  report::Finding growth;
  growth.kind = report::FindingKind::Growth;
  growth.growth = report::GrowthStats{};
  growth.stack = {native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(Params&)", "", 0,
                         "/venv/torch/lib/libc10_cuda.so"),
                  native("main")};
  report::Finding leak = growth;  // no growth figures: nothing to name
  leak.kind = report::FindingKind::Leak, leak.growth.reset();
  std::vector<report::Finding> findings = {growth, leak};
  label_growth_sites(findings, rules);
  CHECK(findings[0].growth->site == site_label(growth.stack, rules));
  CHECK(findings[0].growth->site == "PyTorch's CUDA caching allocator");
  CHECK_FALSE(findings[1].growth);
}
