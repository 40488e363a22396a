// Which ELF objects are loaded where, recorded so that stacks can be symbolized after the process
// is gone. A module is recorded once; a stack holding an address outside every known module makes
// the map look again (the program may have dlopen'ed something since).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit::inject {

// Records every module loaded now. Called once at initialization.
void record_loaded_modules() noexcept;

// Forgets which modules were recorded, and any scan lock a parent thread held at the fork: only
// for a forked child, which starts a trace of its own.
void forget_recorded_modules() noexcept;

// Makes sure every frame falls inside a recorded module, rescanning if one does not.
void ensure_modules_recorded(const uint64_t* frames, size_t count) noexcept;

}  // namespace cuaudit::inject
