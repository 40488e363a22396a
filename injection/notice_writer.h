// What the injection says to the user through the report (a Notice record, shown among the
// process's notes), as opposed to in_target_log.h's line on the program's stderr.
#pragma once

#include "trace_format.h"

namespace cuaudit::inject {

// `text` is cut at 1,024 bytes.
void write_notice(trace::NoticeCode code, const char* text) noexcept;

}  // namespace cuaudit::inject
