// Keeps the machine code of the modules CUDA loads, so that the tool can read what each kernel
// requires of its pointer parameters (tool/kernel_code/kernel_access.h). CUPTI's module-loaded callback hands
// over the cubin only during the callback: it is written at once, beside the trace, as
// kernel-code/<hash>.cubin (processes of one run share identical modules), up to
// CUAUDIT_KERNEL_CODE_LIMIT_MB per process. A ModuleCode fact says what became of each module.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit::inject {

// Reads CUAUDIT_KERNEL_CODE_LIMIT_MB; call once before the callbacks are enabled.
void configure_kernel_code() noexcept;

// Whether modules' code is kept at all (the limit is not 0).
bool keeping_kernel_code() noexcept;

// A module was loaded: `image` is what CUPTI handed over (an ELF cubin for every module the
// driver loads, PTX JIT-compiled ones included).
void on_module_loaded(uint32_t module_id, const void* image, size_t bytes) noexcept;

}  // namespace cuaudit::inject
