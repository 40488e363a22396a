// The analysis of a run directory, as declared stages (in the manner of heaptrack's parse passes).
// analyze_run_dir (analysis.cpp) is these stages in order; each stage's work is a function of its
// own there, named after it.
//
//   Index          open every trace (its first pass: all but the events), read run.json and the
//                  caches kept beside the traces, order the processes
//   Enrich         per process, before its replay: merge in what other sources say (a framework's
//                  history of its pool), read the code of exactly the kernels the report keeps
//   Replay         per process: its events read once as a stream, every observer of every check
//                  on that one replay (the pools' heaps and CUDA's allocation table inside it)
//   ProcessChecks  per process: the check table (checks.cpp), in report order
//   RunChecks      across the run's processes: memory shared between them, library handles,
//                  the kernel filter, --num-callers
//   Finish         the run's notes, paths mapped, suppressions applied, the summary, the caches
//                  saved beside the traces
#pragma once

namespace cuaudit {

enum class Stage { Index, Enrich, Replay, ProcessChecks, RunChecks, Finish };

}  // namespace cuaudit
