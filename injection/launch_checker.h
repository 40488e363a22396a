// Checks the parameters of every kernel launch, in the target because launches are too many to
// record: each pointer parameter must be aligned for its pointee type (from the kernel's mangled
// name) and must point at memory the device can reach; a word of the parameters that may be a
// pointer and is not 16-byte aligned is recorded for the tool to compare with the kernel's code. Only failures become
// trace facts (launch_recorder); the tool judges what an unreachable pointer is.
//
// The common path takes no lock and makes no CUDA call: a kernel's parameter layout is cached
// per thread, and so are the allocation ranges the driver confirmed, until memory is released.
#pragma once

#include <cuda.h>

#include "pointer_reachability.h"  // launch_checks_context_created, note_peer_access
#include "trace_format.h"

namespace cuaudit::inject {

// A launch: `handle` is what the API was given (a CUfunction, a CUkernel, or the runtime's
// cudaKernel_t), `name` the callback's symbolName, `params` the array of pointers to each
// argument (or null with `extra` in CU_LAUNCH_PARAM_BUFFER_POINTER form).
void check_launch(trace::LaunchPath path, const void* handle, const char* name, void* const* params,
                  void* const* extra) noexcept;

// The kernel's parameters checked as above, without counting a launch: `function_first` says which
// of the driver's layout queries fits the handle (a CUfunction first, else a CUkernel first).
void check_kernel_arguments(trace::LaunchPath path, const void* handle, const char* name, bool function_first,
                            void* const* params, void* const* extra) noexcept;

// A graph kernel node whose parameters were just set (created, or updated in its graph);
// launch_graph_nodes.cpp.
void check_graph_node(trace::LaunchPath path, CUgraphNode node) noexcept;

// CUAUDIT_STATS=1: the checks' counters on stderr at exit (for benchmarks).
void log_launch_check_stats() noexcept;

// An update of an instantiated graph's node: the kernel is the node's, the arguments are new
// (launch_graph_nodes.cpp).
void check_graph_exec_update(trace::LaunchPath path, CUgraphNode node, CUfunction function, void* const* params,
                             void* const* extra) noexcept;

}  // namespace cuaudit::inject
