// Use without the launcher (CUDA_INJECTION64_PATH set by hand, in a container entrypoint or a job
// system): the first process of the run reports at its end, by running `cuaudit report` on the
// run directory, as the launcher would have.
#pragma once

namespace cuaudit::inject {

// At initialization: without the launcher and without a root already, this process becomes the
// run's root, and its children (which inherit the environment) record into the same directory.
void adopt_run_as_root_if_standalone(const char* trace_dir) noexcept;

// At the very end of the process: the root runs `cuaudit report` (text on stderr, JSON where
// CUAUDIT_JSON says) and waits for it.
void report_at_exit_if_standalone() noexcept;

}  // namespace cuaudit::inject
