// Which frames of a symbolized stack belong to CUDA or to cuaudit rather than to the program.
#pragma once

#include <vector>

#include "report_model.h"

namespace cuaudit {

// A frame inside the CUDA driver, runtime (shared or linked statically into the program),
// CUPTI, the CUDA headers' inline wrappers, or cuaudit's own libraries.
bool is_cuda_internal(const report::Frame& frame);

// Per frame of a whole stack (innermost first): is it CUDA's rather than the program's? Besides
// is_cuda_internal, the host function nvcc generates for each kernel (named like the kernel, its
// line info pointing into the .cu file) is CUDA's when it calls a launch stub (__device_stub__):
// a launch's first frame is then the <<<>>> line.
std::vector<bool> internal_frames(const std::vector<report::Frame>& frames);

// Drops CUDA-internal frames from the top, so that #0 is the program's call, and every frame
// below main (the C runtime's start-up) from the bottom. A stack made only of internal frames is
// kept whole.
std::vector<report::Frame> user_frames(std::vector<report::Frame> frames);

// The CUDA function the program itself called: the outermost internal frame, reduced to its
// bare name ("cudaMallocHost" for "cudaError cudaMallocHost<float>(float**, unsigned long,
// unsigned int)"). cuda_runtime.h's templates forward to other entry points (cudaMallocHost<T>
// calls cudaHostAlloc), so this can differ from the API CUPTI saw. Empty when unknown.
std::string called_function(const std::vector<report::Frame>& frames);

}  // namespace cuaudit
