// The CUDA toolkit's own programs (nvdisasm, cuobjdump): where they are, and running one for
// what it prints.
#pragma once

#include <string>
#include <vector>

namespace cuaudit {

// A regular file this user may execute.
bool executable(const std::string& path);

// Runs `argv` (in `working_dir` when given) and returns what it wrote on standard output; false
// with `error` (its exit status and the start of what it wrote on standard error) when it could not
// run, failed, or printed more than 1 GiB.
bool capture_output(const std::vector<std::string>& argv, std::string& out, std::string& error,
                    const std::string& working_dir = {});

// `name` (nvdisasm, cuobjdump) where the toolkit is: beside `beside` when given, else
// CUAUDIT_NVDISASM's directory, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin. Empty when none is there.
std::string find_toolkit_program(const std::string& name, const std::string& beside);

}  // namespace cuaudit
