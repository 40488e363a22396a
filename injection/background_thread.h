// cuaudit's own threads inside the program (the trace flusher, the memory sampler).
#pragma once

namespace cuaudit::inject {

// Starts a detached thread running `main`, with every signal blocked: it must never take a signal
// meant for the program's threads. Returns false when the thread could not be created.
bool start_background_thread(void* (*main)(void*)) noexcept;

}  // namespace cuaudit::inject
