#include "python_hooks.h"

#include <unistd.h>

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_dir_layout.h"
#include "safe_file.h"

namespace cuaudit {
namespace {

using nlohmann::json;

constexpr size_t kMaxHooksFileBytes = 1 << 20;

std::string framework_name(const std::string& key) {
  if (key == "torch") return "PyTorch's memory history";
  if (key == "cupy") return "CuPy's memory hook";
  if (key == "jax") return "JAX's live arrays";
  return fmt::format("the {} hook", key);
}

std::string text_of(const json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::vector<std::string> python_hooks_notes(const std::string& json_text) {
  const json doc = json::parse(json_text);
  if (!doc.is_object() || doc.value("format", "") != "cuaudit-python-hooks" || doc.value("version", 0) != 1 ||
      !doc.contains("hooks") || !doc.at("hooks").is_object()) {
    throw std::runtime_error("not a cuaudit-python-hooks file of version 1");
  }
  std::vector<std::string> notes;
  for (const auto& [key, entry] : doc.at("hooks").items()) {
    if (!entry.is_object()) continue;
    const std::string name = framework_name(key), state = text_of(entry, "state"), why = text_of(entry, "why");
    const auto threads = entry.find("threads");
    const std::string on_threads = threads != entry.end() && threads->is_number_unsigned()
                                       ? fmt::format(" on {} thread(s)", threads->get<uint64_t>())
                                       : std::string();
    if (state == "failed") {
      notes.push_back(fmt::format("{} did not attach: {}; its blocks are not followed", name, why));
    } else if (state == "off") {
      notes.push_back(fmt::format("{}: off ({})", name, why));
    } else if (state == "attached" && key == "cupy") {
      notes.push_back(
          fmt::format("{}: attached{} (the importing thread and those started after it)", name, on_threads));
    } else if (state == "attached" && key == "jax") {
      const auto interval = entry.find("interval_ms");
      const uint64_t ms = interval != entry.end() && interval->is_number_unsigned() ? interval->get<uint64_t>() : 0;
      notes.push_back(fmt::format("{}: listed {}at out-of-memory errors and at exit{}", name,
                                  ms ? fmt::format("every {} ms, ", ms) : std::string(),
                                  why.empty() ? std::string() : fmt::format(" ({})", why)));
    } else if (state.empty() && key == "cupy") {
      notes.push_back(fmt::format("{}: installed{}, but CuPy's pool handed out no block", name, on_threads));
    }
  }
  return notes;
}

HooksAnswer python_hooks_answer(const std::string& json_text) {
  const json doc = json::parse(json_text, nullptr, false);
  HooksAnswer out;
  if (!doc.is_object() || doc.value("format", "") != "cuaudit-python-hooks") return out;
  const auto writes = doc.find("writes");
  out.writes = writes != doc.end() && writes->is_boolean() && writes->get<bool>();
  out.answered = text_of(doc, "answered");
  return out;
}

HooksAnswer python_hooks_answer(const std::string& dir, uint64_t pid) {
  std::string text, error;
  if (!read_regular_file(python_hooks_path(dir, pid), kMaxHooksFileBytes, text, error)) return {};
  return python_hooks_answer(text);
}

std::string python_hooks_path(const std::string& dir, uint64_t pid) {
  return fmt::format("{}/{}{}{}", dir, run_dir::PythonHooks.prefix, pid, run_dir::PythonHooks.suffix);
}

void load_python_hooks(const std::string& dir, const ProcessTrace& process, std::vector<std::string>& notes) {
  const std::string path = python_hooks_path(dir, process.pid);
  if (access(path.c_str(), F_OK) != 0) return;  // not a Python process, or one older than this file
  std::string text, error;
  if (!read_regular_file(path, kMaxHooksFileBytes, text, error)) {
    notes.push_back(fmt::format("{}: what the Python hooks did is not known", error));
    return;
  }
  try {
    for (std::string& note : python_hooks_notes(text)) notes.push_back(std::move(note));
  } catch (const std::exception& e) {
    notes.push_back(fmt::format("{} could not be read ({}): what the Python hooks did is not known", path, e.what()));
  }
}

}  // namespace cuaudit
