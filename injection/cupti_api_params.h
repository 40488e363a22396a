// CUPTI's parameter structs of the calls cuaudit records, decoded: which callback ids are the
// tracked allocation and release APIs, what each one allocated or released, and the pointers a
// failed copy or memset was given. Part of the CUPTI seam (the cupti_* files).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

#include "call_recorder.h"

namespace cuaudit::inject {

struct TrackedCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  Api api;
};

// Every callback id of a tracked API (runtime and driver, allocations and releases).
extern const TrackedCallback kTrackedCallbacks[];
extern const size_t kTrackedCallbackCount;

// Fills key and bytes from the call's parameters. Runs at EXIT: out-parameters are valid
// when the call succeeded.
void decode_api_params(Api api, const void* params, ApiCall& call) noexcept;

// The pointers a failed copy or memset was given, so that the tool can tell when one is the
// garbage left by a failed allocation. False for other calls.
bool copy_pointers(CUpti_CallbackId cbid, const void* params, uint64_t (&out)[2]) noexcept;

}  // namespace cuaudit::inject
