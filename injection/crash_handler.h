// Fatal signals: before the process dies, write what the trace buffers hold and record which
// signal ended it; then hand the signal on exactly as it would have gone without cuaudit (the
// program's own handler, or the default action with its exit status and core dump).
#pragma once

namespace cuaudit::inject {

void install_crash_handlers() noexcept;

}  // namespace cuaudit::inject
