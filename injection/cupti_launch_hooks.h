// Where kernel arguments reach CUDA, routed to the launch checker: runtime and driver launches,
// graph kernel nodes (added, captured, updated), and the calls that copy nodes (instantiate,
// clone), whose kernels were checked when the originals were made. Part of the CUPTI seam.
#pragma once

#include <cupti.h>

#include "cupti_thread_state.h"

namespace cuaudit::inject {

// A runtime call that adds graph nodes (NodeAdd), at ENTER and EXIT: the nodes it creates are
// named by it when they are checked.
void on_graph_node_add(CuptiThreadState& tls, CUpti_CallbackId cbid, bool enter) noexcept;

// Runtime calls that pass kernel arguments (Launch): checked at ENTER.
void on_runtime_launch(CuptiThreadState& tls, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept;

// Driver launches made by the program itself (not on behalf of a runtime launch).
void on_driver_launch(const CuptiThreadState& tls, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept;

// RESOURCE GRAPHNODE_CREATED: a kernel node the program added explicitly.
void on_graph_node_created(const CuptiThreadState& tls, const CUpti_GraphData* graph) noexcept;

// cudaDeviceEnablePeerAccess / cuCtxEnablePeerAccess and their Disable twins (Peer), at EXIT:
// which device may reach which (the peer check of launch parameters).
void on_peer_access_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept;

// Driver launch callbacks double the cost of every runtime launch (it makes one too): enabled
// only once the program takes a kernel handle of its own. Idempotent.
void enable_driver_launch_checks(CUpti_SubscriberHandle subscriber) noexcept;

}  // namespace cuaudit::inject
