// PyTorch's caching allocator as a memory source: the blocks it hands out of its cudaMalloc
// segments, from its own memory history (python/cuaudit_site/cuaudit_hooks.py writes
// torch-blocks-<pid>.json at exit: the history's block and segment events, out-of-memory entries,
// the blocks and segments allocated then, and their Python stacks). They become events of the
// process's pool `PyTorch's CUDA caching allocator`, merged by time into the one replay of the
// process's trace (TraceFile::play), so that every check sees a tensor as the block it is, inside
// the segment it lies in.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "run_dir_layout.h"
#include "trace_model.h"

namespace cuaudit {

inline constexpr const char* kTorchBlocksPrefix = run_dir::TorchBlocks.prefix;

// What PyTorch's history says of one process, as events of its pool.
struct TorchHistory {
  std::vector<Event> events;  // in time order (seq 0: the merge places them); blocks and segments
  bool any_block = false;     // a block was handed out (with the cache off there are none)
};

// The history file of `process`, if `dir` has one: its pool is added to `process.pools`, its
// Python stacks to `process.python_stacks` and its out-of-memory entries to
// `process.framework_ooms`; what was read, or why nothing could be, goes to `notes`.
std::optional<TorchHistory> load_torch_history(const std::string& dir, ProcessTrace& process,
                                               std::vector<std::string>& notes);

// The same from the file's text (throws std::runtime_error on a malformed file). Exposed for the tests.
TorchHistory torch_history(const std::string& json_text, ProcessTrace& process, std::vector<std::string>& notes);

}  // namespace cuaudit
