#include "fingerprint.h"

#include <fmt/format.h>

namespace cuaudit {
namespace {

std::string text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

std::string basename_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

std::string finding_fingerprint(const nlohmann::json& f) {
  std::string key = f.value("kind", "") + "|" + f.value("api", "") + "|" + text(f.value("result", nlohmann::json())) + "|";
  // Launch findings: which kernel parameter (two bad arguments of one launch are two findings).
  if (const auto p = f.value("parameter", nlohmann::json()); p.is_object()) {
    key += text(p.value("kernel", nlohmann::json())) + "#" + std::to_string(p.value("index", 0)) + "|";
  }
  for (const auto& frame : f.value("stack", nlohmann::json::array())) {
    key += text(frame.value("function", nlohmann::json())) + "@" + basename_of(text(frame.value("file", nlohmann::json()))) + ";";
  }
  return key;
}

std::string describe_finding(const nlohmann::json& f) {
  std::string where = "(no stack)";
  const auto stack = f.value("stack", nlohmann::json::array());
  if (!stack.empty()) {
    const std::string function = text(stack[0].value("function", nlohmann::json()));
    const std::string file = basename_of(text(stack[0].value("file", nlohmann::json())));
    where = fmt::format("{} ({})", function.empty() ? "??" : function, file.empty() ? "??" : file);
  }
  return fmt::format("{} {} at {}", f.value("kind", ""), f.value("api", ""), where);
}

}  // namespace cuaudit
