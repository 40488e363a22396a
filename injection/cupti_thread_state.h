// What a thread is in the middle of, as cuaudit's CUPTI callbacks see it. The dispatcher
// (cupti_subscriber.cpp) owns the one thread_local instance and hands it to the launch hooks.
#pragma once

#include "trace_format.h"

namespace cuaudit::inject {

// What this thread is in the middle of, as the callbacks see it. One thread_local for all of it:
// every CUDA call comes through here twice, and each thread_local costs a lookup in a library
// loaded with dlopen.
struct CuptiThreadState {
  // Re-entrancy guard: CUPTI calls we make (cuptiGetDeviceId) may call the driver, whose
  // callbacks come back here.
  bool in_callback = false;
  // Inside a runtime call that launches or sets kernel arguments: the driver calls and graph nodes
  // it makes on our behalf were checked already, at the runtime call.
  bool in_runtime_launch = false;
  // Inside a call that copies existing nodes (instantiate, clone, child graphs, exec update):
  // their kernels were checked when the originals were made.
  bool copying_nodes = false;
  // The runtime call adding graph nodes, to name the nodes it creates by it.
  trace::LaunchPath adding_nodes = trace::LaunchPath::cuGraphAddKernelNode;
  // Runtime calls in progress (every runtime callback is enabled): a driver call made at depth 0
  // is the program's own.
  int runtime_depth = 0;
};

}  // namespace cuaudit::inject
