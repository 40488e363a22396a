// Reads trace-<pid>.cutrace files written by the injection (see injection/trace_format.h).
#pragma once

#include <stdexcept>
#include <string>

#include "trace_model.h"

namespace cuaudit {

// A file that is not a cuaudit trace at all, or of a version this build cannot read.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Damage inside an otherwise valid trace (a truncated last chunk, an unknown API id) is not an
// error: what could be read is returned, and the damage is described in ProcessTrace::problems.
ProcessTrace read_trace_file(const std::string& path);
ProcessTrace parse_trace(const std::string& bytes, const std::string& name);

}  // namespace cuaudit
