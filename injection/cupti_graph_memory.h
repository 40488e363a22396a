// Graph memory as facts: the memory nodes a graph is made of, which executable graph came from
// which graph, and each launch. The tool replays them (the allocation happens at each launch, at the
// address fixed when the node was made). Part of the CUPTI seam (the cupti_* files).
//
// Every fact is taken at the EXIT of the call that made it, from the call's own parameters: the
// node's address and size, the graph and executable handles, the instantiation flags. A driver
// call is the program's own only when no runtime call is in progress (`runtime_depth` 0).
#pragma once

#include <cupti.h>

#include <cstdint>

#include "api_table.h"

namespace cuaudit::inject {

// Memory nodes added (cudaGraphAddMemAllocNode, cudaGraphAddMemFreeNode, cudaGraphAddNode and the
// driver's), graphs instantiated, cloned and destroyed, executable graphs launched and destroyed:
// the GraphMemory callbacks of cupti_callbacks.inc.
void on_graph_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data,
                   int runtime_depth) noexcept;

// At the EXIT of cudaMallocAsync/cudaFreeAsync (and the driver's, and the pool forms) on a stream
// being captured: the call made a memory node of the capture's graph, not an allocation. Records
// the node and returns true (the caller then records no allocation or release).
bool record_if_captured(Api api, uint64_t stream, uint64_t dptr, uint64_t bytes, int32_t device) noexcept;

}  // namespace cuaudit::inject
