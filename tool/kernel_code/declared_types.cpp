#include "declared_types.h"

#include <fmt/format.h>

#include "json_reading.h"
#include "kernel_names.h"

namespace cuaudit {
namespace {

// Objects whose debug information never describes the program's kernels.
bool cuda_or_system(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  for (const char* prefix : {"libcuda.", "libcudart", "libcupti", "libcuaudit", "libnvrtc", "libc.", "libc-", "libm.",
                             "libstdc++", "libgcc_s", "ld-linux", "libpthread", "libdl.", "linux-vdso"}) {
    if (base.rfind(prefix, 0) == 0) return true;
  }
  return path.empty() || path[0] == '[';
}

// The objects of a stack, innermost first, each once.
std::vector<std::string> objects_of(const ProcessTrace& trace, uint64_t stack_id) {
  std::vector<std::string> paths;
  const auto stack = trace.stacks.find(stack_id);
  if (stack == trace.stacks.end()) return paths;
  for (uint64_t address : stack->second) {
    for (const ModuleInfo& m : trace.modules) {
      if (address < m.start || address >= m.end) continue;
      if (!cuda_or_system(m.path) && std::find(paths.begin(), paths.end(), m.path) == paths.end())
        paths.push_back(m.path);
      break;
    }
  }
  return paths;
}

}  // namespace

const DeclaredPointer* DeclaredTypes::at(const ProcessTrace& trace, const std::string& kernel, uint64_t stack_id,
                                         uint16_t param_index, uint16_t member_offset) {
  auto found = found_.find(kernel);
  if (found == found_.end()) {
    if (without_debug_info_.count(kernel)) return nullptr;
    for (const std::string& path : objects_of(trace, stack_id)) {
      if (auto pointers = declared_pointers(path, kernel)) {
        found = found_.emplace(kernel, std::move(*pointers)).first;
        changed_ = true;
        break;
      }
    }
    if (found == found_.end()) {
      without_debug_info_.insert(kernel);
      return nullptr;
    }
  }
  const auto pointer = found->second.find(declared_key(param_index, member_offset));
  return pointer == found->second.end() || pointer->second.alignment <= 1 ? nullptr : &pointer->second;
}

std::vector<std::string> DeclaredTypes::notes(const std::set<std::string>& kernels_judged) const {
  std::vector<std::string> missing;
  for (const std::string& kernel : without_debug_info_) {
    if (kernels_judged.count(kernel)) missing.push_back(kernel);
  }
  if (missing.empty()) return {};
  return {fmt::format(
      "no debug information describes {} kernel(s) given pointers that are not 16-byte aligned (first: {}): the "
      "alignment their parameters' types declare (__align__, alignas) was not checked; build the host code with -g "
      "and keep the program where it ran (kernels the program loads itself, with cuModuleLoad or NVRTC, have no "
      "host-side declaration to read)",
      missing.size(), kernel_display_name(missing.front()))};
}

nlohmann::json DeclaredTypes::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [kernel, pointers] : found_) {
    nlohmann::json entries = nlohmann::json::object();
    for (const auto& [key, p] : pointers)
      entries[fmt::format("{}/{}", key >> 16, key & 0xffff)] = {{"alignment", p.alignment}, {"pointee", p.pointee}};
    out[kernel] = std::move(entries);
  }
  return out;
}

void DeclaredTypes::from_json(const nlohmann::json& declared) {
  for (const auto& [kernel, entries] : declared.items()) {
    DeclaredPointers pointers;
    for (const auto& [where, p] : entries.items()) {
      const size_t slash = where.find('/');
      if (slash == std::string::npos) throw std::runtime_error("a declared pointer's place is not PARAM/OFFSET");
      const auto key = declared_key(static_cast<uint16_t>(std::stoul(where.substr(0, slash))),
                                    static_cast<uint16_t>(std::stoul(where.substr(slash + 1))));
      pointers[key] = {report::json_reading::number_of<uint32_t>(p.at("alignment"), "alignment"),
                       p.at("pointee").get<std::string>()};
    }
    found_[kernel] = std::move(pointers);
  }
}

}  // namespace cuaudit
