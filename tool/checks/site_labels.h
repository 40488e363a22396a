// Short names for allocation sites where a report has one line for them (chart legends, the
// sites held at a peak): the user's code, not the innermost frame (issue 35: a PyTorch run's legend
// read six times "cudaMalloc at c10::cuda::...::alloc_block" and twice "at ??").
#pragma once

#include <string>
#include <vector>

#include "report_model.h"
#include "suppressions.h"

namespace cuaudit {

// The native frames' name: the allocator that hands the memory out, by the held_by_allocator rules
// ("PyTorch's CUDA caching allocator"), else report::stack_site_name ("upload app.cu:42", "serve
// (libapp.so)", module+offset); with the user's Python line after it ("cublasCreate_v2
// (libcublas.so.13) from train.py:19"), or that line alone for a framework's block, which has no
// native frames ("train.py:19"); "no stack recorded" for neither.
std::string site_label(const std::vector<report::Frame>& stack, const Suppressions& rules);

// Fills every peak site's and series site's `site`; sites of one API that get the same name are
// one site there (their bytes and counts added), the biggest first.
void label_timeline_sites(report::Timeline& timeline, const Suppressions& rules);

// Gives every growth finding's figures the name its site has in the series (for the metrics).
void label_growth_sites(std::vector<report::Finding>& findings, const Suppressions& rules);

}  // namespace cuaudit
