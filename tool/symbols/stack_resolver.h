// Resolves a trace's stack ids to the frames a user reads: symbolized, inlined frames expanded,
// CUDA-internal frames dropped from the top.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "report_model.h"
#include "result_use.h"
#include "symbolizer.h"
#include "trace_model.h"

namespace cuaudit {

class StackResolver {
 public:
  StackResolver(const ProcessTrace& trace, Symbolizer& symbolizer) : trace_(trace), symbolizer_(symbolizer) {}

  // Empty when the id is unknown (no stack was recorded).
  const std::vector<report::Frame>& user_stack(uint64_t stack_id);

  // The stack's return addresses from the program's own call outwards (the first whose outermost
  // source location is not CUDA's), for judging what the call site did with a result.
  const std::vector<RawFrame>& user_raw_frames(uint64_t stack_id);

  // Where a stack's first user frame is, for one-line mentions: "app.cu:12", else the function.
  std::string call_site(uint64_t stack_id);

  // The API to name an event by: the one the program called where the stack shows it (a
  // cuda_runtime.h template forwarding cudaMallocHost to cudaHostAlloc), else `recorded`.
  Api api_called(uint64_t stack_id, Api recorded);

 private:
  struct Resolved {
    std::vector<report::Frame> user_frames;
    std::string called_function;
    std::vector<RawFrame> user_raw_frames;
  };
  const Resolved& resolve(uint64_t stack_id);
  const ModuleInfo* module_for(uint64_t address) const;

  const ProcessTrace& trace_;
  Symbolizer& symbolizer_;
  std::unordered_map<uint64_t, Resolved> resolved_;
};

}  // namespace cuaudit
