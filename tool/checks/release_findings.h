// Mismatched, double and invalid releases as report findings, each with every stack that
// explains it (the release, the first release, the allocation).
#pragma once

#include <vector>

#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"

namespace cuaudit {

// One finding per (problem, release site, allocation site), with the number of times it happened.
std::vector<report::Finding> release_findings(const std::vector<ReleaseFinding>& problems, const ProcessTrace& trace,
                                              StackResolver& stacks);

// The API that releases memory allocated by `allocation` ("cudaFreeHost" for cudaMallocHost,
// "cuMemFreeHost" for cuMemAllocHost): what a mismatched release should have called.
std::string_view right_release_for(Api allocation);

}  // namespace cuaudit
