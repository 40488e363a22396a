// Memory that a CUDA library handle holds (cuBLAS, cuBLASLt, cuDNN, cuFFT, cuSPARSE, cuSOLVER,
// cuRAND, NCCL): leaked with the handle when nothing destroys it. A handle the program created
// itself and never destroyed is the program's leak, reported at the create call with the destroy
// call that was missing, one finding per create call site. A handle a framework created (the
// create call comes from PyTorch, JAX/XLA, CuPy, TensorRT or TensorFlow code) is kept by the
// framework for the life of the process: held_by_allocator, never gating.
#pragma once

#include <string>
#include <vector>

#include "report_model.h"

namespace cuaudit {

// Rewrites the leak findings of one process whose allocation stack passes through a library's
// create call (in place; merged by create site).
void judge_library_handles(std::vector<report::Finding>& findings);

}  // namespace cuaudit
