// Memory that a CUDA library handle holds (cuBLAS, cuBLASLt, cuDNN, cuFFT, cuSPARSE, cuSOLVER,
// cuRAND, NCCL): leaked with the handle when nothing destroys it. A handle the program created
// itself and never destroyed is the program's leak, reported at the create call with the destroy
// call that was missing, one finding per create call site. A handle a framework created (the
// create call comes from PyTorch, JAX/XLA, CuPy, TensorRT or TensorFlow code) is kept by the
// framework for the life of the process: held_by_allocator, never gating (asked by the leak check
// when it makes the finding, holders.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report_model.h"

namespace cuaudit {

// A handle a framework created: who holds its memory ("cuBLAS handle workspace") and a note
// naming the framework. Nothing for a stack through no create call, or the program's own.
struct HeldHandle {
  std::string holder;
  std::string note;
};
std::optional<HeldHandle> framework_handle(const std::vector<report::Frame>& stack);

// Where the frames from the (outermost) create call outwards start: the program's own handle as
// the report shows it. 0 (the whole stack) when it passes through no create call.
size_t create_frame(const std::vector<report::Frame>& stack);

// Merges the leak findings of one process whose allocation stack passes through a library's
// create call (the program's own handles): one per create call site, naming the missing destroy.
void judge_library_handles(std::vector<report::Finding>& findings);

}  // namespace cuaudit
