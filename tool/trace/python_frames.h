// Python stacks as report frames, and which of their frames are the user's own code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report_model.h"
#include "trace_model.h"

namespace cuaudit {

// The Python stack with this id as report frames (module "python"), innermost first; empty when
// the trace has no such stack.
std::vector<report::Frame> python_frames(const ProcessTrace& trace, uint64_t python_stack_id);

// Frames of installed packages, the standard library and the interpreter's frozen modules:
// PyTorch's own Python (torch/nn/modules/...) is not where the user's bug is.
bool is_library_python_file(const std::string& file);

// The innermost frame that is the user's code (else the innermost frame); frames.size() when empty.
size_t user_python_frame(const std::vector<report::Frame>& frames);

}  // namespace cuaudit
