// A framework's allocator as a memory source, from the file cuaudit's Python hooks write for it
// (python/cuaudit_site/cuaudit_hooks.py): the blocks it handed out and took back, the segments it
// took from CUDA, its out-of-memory errors, what was still allocated at the end, and their Python
// stacks. Two frameworks write one (CuPy's blocks reach the injection live instead):
//   - PyTorch's caching allocator: torch-blocks-<pid>.json at exit, from its memory history;
//   - XLA's allocator under JAX: jax-arrays-<pid>.json at exit and at each out-of-memory error,
//     from its live arrays listed at intervals (an array first seen is a block handed out, one gone
//     a block taken back; no segments: XLA does not say where its blocks lie, but its statistics
//     at each listing say what it holds, used and its largest free block: PoolFigures events).
// The events become events of the process's pool for that source, merged by time into the one
// replay of the process's trace (TraceFile::play), so that every check sees a tensor or an array
// as the block it is.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "memory_sources.h"
#include "run_dir_layout.h"
#include "trace_model.h"

namespace cuaudit {

// What tells one framework's file apart from another's.
struct FrameworkFile {
  run_dir::Entry entry;  // its name in the run directory
  const char* format;    // its "format" field
  int max_version;       // the newest version this build reads (1 is the oldest)
  MemorySource source;   // the pool's memory source (common/memory_sources.inc)
  Api hand_out, take_back;
  const char* framework;  // how notes name it: "PyTorch's caching allocator"
  const char* facility;   // what the hook read: "its memory history"
};

extern const FrameworkFile kTorchBlocksFile;
extern const FrameworkFile kJaxArraysFile;
extern const FrameworkFile* const kFrameworkFiles[2];

// What a framework's file says of one process, as events of its pool.
struct FrameworkHistory {
  std::vector<Event> events;  // in time order (seq 0: the merge places them); blocks and segments
  bool any_block = false;     // a block was handed out (with PyTorch's cache off there are none)
};

// The file of `process` for `file`, if `dir` has one: its pool is added to `process.pools`, its
// Python stacks to `process.python_stacks` and its out-of-memory entries to
// `process.framework_ooms`; what was read, or why nothing could be, goes to `notes`.
std::optional<FrameworkHistory> load_framework_history(const FrameworkFile& file, const std::string& dir,
                                                       ProcessTrace& process, std::vector<std::string>& notes);

// Every framework's file of `process`, their events merged by time.
std::vector<Event> load_framework_histories(const std::string& dir, ProcessTrace& process,
                                            std::vector<std::string>& notes);

// The same from the file's text (throws std::runtime_error on a malformed file). Exposed for the tests.
FrameworkHistory framework_history(const FrameworkFile& file, const std::string& json_text, ProcessTrace& process,
                                   std::vector<std::string>& notes);

}  // namespace cuaudit
