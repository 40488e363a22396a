// Facts a process may record without end stay within bounds as they are read.
#include <doctest/doctest.h>

#include "bounded_facts.h"

using namespace cuaudit;

TEST_CASE("thinning keeps the higher use of each two neighbouring samples, per device, and counts the rest") {
  ProcessTrace p;
  for (uint64_t i = 0; i < 6; ++i) p.samples.push_back({i + 1, i * 10, 0, 1000 - (i % 3) * 100, 1000, i});
  p.samples.push_back({7, 70, 1, 500, 1000, 0});
  thin_samples(p);
  REQUIRE(p.samples.size() == 4);  // device 0: 6 -> 3; device 1: its one sample stays
  CHECK(p.samples_thinned == 3);
  CHECK(p.samples[0].free_bytes == 900);  // of 1000 and 900 free, the one with more in use
  CHECK(p.samples[0].launches == 1);      // the later launch count stays
  CHECK(p.samples[1].free_bytes == 800);
  CHECK(p.samples[3].device == 1);
}

TEST_CASE("migrations beyond the bound are counted, not kept") {
  ProcessTrace p;
  p.managed_migrations.resize(kMaxManagedMigrations - 1);
  keep_migration(p, {1, 2, 0x1000, 4096, 0, 1, trace::MigrationKind::HostToDevice});
  keep_migration(p, {3, 4, 0x2000, 4096, 0, 1, trace::MigrationKind::DeviceToHost});
  CHECK(p.managed_migrations.size() == kMaxManagedMigrations);
  CHECK(p.managed_migrations.back().address == 0x1000);
  CHECK(p.managed_migrations_dropped == 1);
}

TEST_CASE("a migration cause this build does not know is kept as unknown") {
  ProcessTrace p;
  keep_migration(p, {1, 2, 0x1000, 4096, 0, 1, trace::MigrationKind::HostToDevice, trace::MigrationCause(9)});
  keep_migration(p, {1, 2, 0x1000, 4096, 0, 1, trace::MigrationKind::HostToDevice, trace::MigrationCause::User});
  CHECK(p.managed_migrations[0].cause == trace::MigrationCause::Unknown);
  CHECK(p.managed_migrations[1].cause == trace::MigrationCause::User);
}

TEST_CASE("kernels' runs beyond the bound are counted, and a run that ends before it starts is refused") {
  ProcessTrace p;
  CHECK_FALSE(keep_kernel_span(p, {10, 5, 1, 0, 7}));
  CHECK(p.kernel_spans.empty());
  p.kernel_spans.resize(kMaxKernelSpans - 1);
  CHECK(keep_kernel_span(p, {1, 2, 1, 0, 7}));
  CHECK(keep_kernel_span(p, {3, 4, 1, 0, 7}));
  CHECK(p.kernel_spans.size() == kMaxKernelSpans);
  CHECK(p.kernel_spans_dropped == 1);
}
