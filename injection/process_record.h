// The process record (ProcessInfoRecord) that opens every trace: who the process is, when it began
// and its command line. The reader takes a trace without one for a trace whose first chunk is lost
// (tool/trace/chunk_screen.h), so whatever opens a trace writes it first: the injection at
// initialization and in a forked child, and the tests and benchmarks that drive the recorder.
#pragma once

namespace cuaudit::inject {

// `flush_interval_ms`: at most this much of the trace is lost when the process is killed outright.
void write_process_info(unsigned flush_interval_ms) noexcept;

}  // namespace cuaudit::inject
