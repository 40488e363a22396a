// What the program's debug information declares of the pointers a kernel takes (debug_types.h),
// looked up once per kernel in the objects its launches came from, and kept in the run's
// kernel-access.json beside what the kernel's code requires (kernel_access.h), so that a recorded
// run reads the same on a machine without the program.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "debug_types.h"
#include "trace_model.h"

namespace cuaudit {

class DeclaredTypes {
 public:
  // The pointer at (param_index, member_offset) of `kernel` as the program declared it; null
  // when the program's debug information is not found or declares no alignment there. The
  // objects searched are those of the launch's stack (`stack_id`) that are not CUDA's or the
  // system's.
  const DeclaredPointer* at(const ProcessTrace& trace, const std::string& kernel, uint64_t stack_id,
                            uint16_t param_index, uint16_t member_offset);

  // Kernels looked up and not described by any object: the report says so once.
  std::vector<std::string> notes(const std::set<std::string>& kernels_judged) const;

  nlohmann::json to_json() const;
  void from_json(const nlohmann::json& declared);  // throws on a malformed document
  bool changed() const { return changed_; }

 private:
  std::map<std::string, DeclaredPointers> found_;  // kernel -> its pointers
  std::set<std::string> without_debug_info_;       // kernels no object described
  bool changed_ = false;
};

}  // namespace cuaudit
