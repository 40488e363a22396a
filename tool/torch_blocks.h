// PyTorch's tensors with its caching allocator on: the blocks it hands out of its cudaMalloc
// segments, from its own memory history (python/cuaudit_site/cuaudit_hooks.py writes
// torch-blocks-<pid>.json at exit: the history's allocation events, the blocks allocated then and
// their Python stacks). The blocks are replayed as a trace of their own, beside the process's
// memory samples, and judged for growth at the Python lines that allocated them; the timeline
// gets what the blocks held (allocated) beside the segments (reserved).
#pragma once

#include <string>
#include <vector>

#include "report_model.h"
#include "run_dir_layout.h"
#include "symbolizer.h"
#include "trace_model.h"

namespace cuaudit {

inline constexpr const char* kTorchBlocksPrefix = run_dir::TorchBlocks.prefix;

// What PyTorch's blocks say about `process` (nothing when `dir` has no blocks file for it): growth
// findings replace those the segments alone gave (which named the caching allocator, not the
// line); notes go to `notes`; each timeline sample of the process gets its blocks' bytes.
void analyze_torch_blocks(const std::string& dir, const ProcessTrace& process, Symbolizer& symbolizer,
                          std::vector<report::Finding>& findings, std::vector<std::string>& notes,
                          report::Timeline& timeline);

// The blocks file, read into a trace of its own: block allocations and frees (CUDACachingAllocator
// APIs, Python stacks), merged by time with `process`'s samples. Throws std::runtime_error on a
// malformed file. Exposed for the tests.
ProcessTrace torch_block_trace(const std::string& json_text, const ProcessTrace& process,
                               std::vector<std::string>& notes);

}  // namespace cuaudit
