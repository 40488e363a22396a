// Managed memory moved by unified memory, per device over the run (the HTML timeline's migration
// chart, docs/RESOURCES.md): CUPTI's host-to-device and device-to-host records, their bytes summed
// in equal time buckets by the device they moved to or from.
#pragma once

#include <cstddef>

#include "report_model.h"
#include "trace_model.h"

namespace cuaudit {

// Appends one series per device that `trace`'s migrations moved memory to or from.
void add_migration_series(const ProcessTrace& trace, report::Timeline& timeline, size_t buckets = 100);

}  // namespace cuaudit
