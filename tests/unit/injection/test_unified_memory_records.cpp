// CUPTI's unified-memory records through the real path: activity buffers built from CUPTI's own
// structs, read by CUPTI's own parser (libcupti's cuptiActivityGetNextRecord, which needs no GPU),
// written by the real recorder and read back by the real reader.
#include <cupti.h>
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "cupti_unified_memory.h"
#include "recorder_trace.h"

using namespace cuaudit;

namespace {

constexpr uint64_t kAddress = 0x7e0000200000;

CUpti_ActivityUnifiedMemoryCounter3 counter(CUpti_ActivityUnifiedMemoryCounterKind kind, uint64_t value,
                                            uint64_t start) {
  CUpti_ActivityUnifiedMemoryCounter3 r{};
  r.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
  r.counterKind = kind;
  r.value = value;
  r.start = start;
  r.end = start + 2000;
  r.address = kAddress;
  r.srcId = 1;
  r.dstId = 0;
  return r;
}

// A buffer as CUPTI fills it: records one after another, 8-byte aligned.
struct ActivityBuffer {
  alignas(8) uint8_t bytes[8192] = {};
  size_t used = 0;
  template <typename Record>
  void add(const Record& r) {
    std::memcpy(bytes + used, &r, sizeof r);
    used += (sizeof r + 7) / 8 * 8;
  }
};

std::vector<ManagedMigration> migrations_at(const ProcessTrace& t, uint64_t address) {
  std::vector<ManagedMigration> out;
  for (const ManagedMigration& m : t.managed_migrations)
    if (m.address == address) out.push_back(m);
  return out;
}

}  // namespace

TEST_CASE("unified-memory records from a CUPTI buffer become ManagedMigration records the tool reads back") {
  testing::recorder_trace_path();
  ActivityBuffer buffer;
  buffer.add(counter(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, 2 << 20, 1000000));
  buffer.add(counter(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 7, 1001000));
  buffer.add(counter(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, 2 << 20, 1002000));
  buffer.add(counter(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING, 2 << 20, 1003000));
  CUpti_ActivityMemset memset_record{};  // another kind of activity in the same buffer: skipped
  memset_record.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  buffer.add(memset_record);
  buffer.add(counter(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_UNKNOWN, 1, 1004000));  // not a counter we know
  CHECK(inject::record_unified_memory_buffer(buffer.bytes, buffer.used) == 4);

  const auto found = migrations_at(testing::read_recorder_trace(), kAddress);
  REQUIRE(found.size() == 4);
  CHECK(found[0].kind == trace::MigrationKind::HostToDevice);
  CHECK(found[0].value == 2u << 20);
  CHECK(found[0].src_id == 1);
  CHECK(found[0].dst_id == 0);
  CHECK(found[1].kind == trace::MigrationKind::GpuPageFault);
  CHECK(found[1].value == 7);
  CHECK(found[2].kind == trace::MigrationKind::DeviceToHost);
  CHECK(found[3].kind == trace::MigrationKind::Thrashing);
  // CUPTI's clock moved onto the trace's: the records keep their order and spacing.
  CHECK(found[1].start_ns - found[0].start_ns == 1000);
  CHECK(found[0].end_ns - found[0].start_ns == 2000);
}

TEST_CASE("kernels' runs in the same buffers become KernelSpan records, and the program's prefetch keeps its cause") {
  testing::recorder_trace_path();
  ActivityBuffer buffer;
  CUpti_ActivityKernel10 run{};
  run.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  run.name = "_Z5scalePfmf";
  run.start = 3000000;
  run.end = 3004000;
  run.streamId = 7;
  buffer.add(run);
  auto prefetch = counter(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, 1 << 20, 3001000);
  prefetch.flags = CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER;
  buffer.add(prefetch);
  CHECK(inject::record_unified_memory_buffer(buffer.bytes, buffer.used) == 2);

  const ProcessTrace t = testing::read_recorder_trace();
  REQUIRE(!t.kernel_spans.empty());
  const KernelSpan& span = t.kernel_spans.back();
  CHECK(t.kernels.at(span.kernel_id) == "_Z5scalePfmf");
  CHECK(span.end_ns - span.start_ns == 4000);
  const auto moved = migrations_at(t, kAddress);
  REQUIRE(!moved.empty());
  CHECK(moved.back().cause == trace::MigrationCause::User);
  CHECK(moved.back().start_ns - span.start_ns == 1000);  // one clock for both
}
