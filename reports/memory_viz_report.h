// --memory-viz FILE: report.memory_viz as a PyTorch memory snapshot, the pickle that
// torch.cuda.memory._dump_snapshot() writes and that pytorch.org/memory_viz
// (torch/utils/viz/MemoryViz.js) and torch.cuda._memory_viz read: {"segments": [...],
// "device_traces": [[...] per device]}. Segments carry their device, address, sizes and blocks
// (tiling them: "active_allocated" ones with their frames, "inactive" gaps); trace entries carry
// action, addr, size, stream, time_us and frames ({"filename", "line", "name"}, innermost first).
// Protocol 4 without frames: the viewer shows nothing for protocol 5.
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

// An empty snapshot when the report has none (no device memory was seen).
std::string render_memory_viz(const Report& report);

}  // namespace cuaudit::report
