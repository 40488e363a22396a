// CUPTI's parameter structs of the calls cuaudit records, decoded: what each tracked allocation or
// release allocated or released, and the pointers a failed copy or memset was given. Which
// callback is which API is cupti_callbacks.inc's. Part of the CUPTI seam (the cupti_* files).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

#include "call_recorder.h"

namespace cuaudit::inject {

// Fills key and bytes from the call's parameters. Runs at EXIT: out-parameters are valid
// when the call succeeded.
void decode_api_params(Api api, const void* params, ApiCall& call) noexcept;

// An IPC or pool export (cudaIpcGetMemHandle, cudaMemPoolExportPointer and their driver forms),
// at its EXIT: the exported pointer and the hash of the handle the program will pass on.
bool exported_memory(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, uint64_t& pointer,
                     uint64_t& hash) noexcept;

// The pointers a failed copy or memset was given, so that the tool can tell when one is the
// garbage left by a failed allocation. False for other calls.
bool copy_pointers(CUpti_CallbackId cbid, const void* params, uint64_t (&out)[2]) noexcept;

}  // namespace cuaudit::inject
