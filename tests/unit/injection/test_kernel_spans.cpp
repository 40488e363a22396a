// CUPTI's kernel records as KernelSpan records: the real recorder, the real reader.
#include <cupti.h>
#include <doctest/doctest.h>

#include "kernel_spans.h"
#include "recorder_trace.h"

using namespace cuaudit;

namespace {

CUpti_ActivityKernel10 kernel_run(const char* name, uint64_t start, uint32_t stream) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = name;
  k.start = start;
  k.end = start ? start + 5000 : 0;
  k.deviceId = 1;
  k.streamId = stream;
  return k;
}

bool record(const CUpti_ActivityKernel10& k, int64_t offset = 0) {
  return inject::record_kernel_span(reinterpret_cast<const CUpti_Activity*>(&k), offset);
}

}  // namespace

TEST_CASE("each run is a KernelSpan, a kernel named once, by its name, not CUPTI's pointer to it") {
  testing::recorder_trace_path();
  static char first_copy[] = "_Z5touchPfi", second_copy[] = "_Z5touchPfi";
  CHECK(record(kernel_run(first_copy, 2000000, 7), 100));
  CHECK(record(kernel_run(second_copy, 2010000, 13), 100));
  CHECK(record(kernel_run("_Z5otherv", 2020000, 7), 100));

  const ProcessTrace t = testing::read_recorder_trace();
  REQUIRE(t.kernel_spans.size() >= 3);
  const KernelSpan& a = t.kernel_spans[t.kernel_spans.size() - 3];
  const KernelSpan& b = t.kernel_spans[t.kernel_spans.size() - 2];
  const KernelSpan& c = t.kernel_spans.back();
  CHECK(a.kernel_id == b.kernel_id);
  CHECK(c.kernel_id != a.kernel_id);
  CHECK(t.kernels.at(a.kernel_id) == "_Z5touchPfi");
  CHECK(t.kernels.at(c.kernel_id) == "_Z5otherv");
  size_t named_touch = 0;
  for (const auto& [id, name] : t.kernels) named_touch += name == "_Z5touchPfi";
  CHECK(named_touch == 1);
  CHECK(a.start_ns == 2000100);  // moved onto the trace's clock
  CHECK(a.end_ns - a.start_ns == 5000);
  CHECK(a.device == 1);
  CHECK(a.stream == 7);
  CHECK(b.stream == 13);
}

TEST_CASE("a run CUPTI could not time, and records of other kinds, are not spans") {
  CHECK_FALSE(record(kernel_run("_Z5otherv", 0, 7)));
  CUpti_ActivityMemset memset_record{};
  memset_record.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  CHECK_FALSE(inject::record_kernel_span(reinterpret_cast<const CUpti_Activity*>(&memset_record), 0));
}
