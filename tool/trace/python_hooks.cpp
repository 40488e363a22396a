#include "python_hooks.h"

#include <unistd.h>

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "memory_sources.h"
#include "python_contract.h"
#include "run_dir_layout.h"
#include "safe_file.h"

namespace cuaudit {
namespace {

using nlohmann::json;

constexpr size_t kMaxHooksFileBytes = 1 << 20;

std::string framework_name(const std::string& key) {
  if (const python_contract::FrameworkInfo* f = python_contract::framework_by_module(key.c_str())) return f->hook_name;
  return fmt::format("the {} hook", key);
}

// The pool a framework's hook follows, by its memory source's name ("CuPy's memory pool").
std::string pool_name(const std::string& key) {
  const python_contract::FrameworkInfo* f = python_contract::framework_by_module(key.c_str());
  const SourceInfo* source = f ? source_by_key(f->source_key) : nullptr;
  return source ? source->description : fmt::format("the {} pool", key);
}

std::string text_of(const json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::vector<std::string> python_hooks_notes(const std::string& json_text) {
  const json doc = json::parse(json_text);
  const python_contract::DocumentInfo& hooks_state = python_contract::kHooksState;
  if (!doc.is_object() || doc.value("format", "") != hooks_state.format ||
      doc.value("version", 0) != hooks_state.version || !doc.contains("hooks") || !doc.at("hooks").is_object()) {
    throw std::runtime_error(fmt::format("not a {} file of version {}", hooks_state.format, hooks_state.version));
  }
  // A note follows what the hook wrote, never which framework it is (python_contract.inc names
  // them): a hook that follows threads writes "threads", one that lists at intervals "interval_ms".
  std::vector<std::string> notes;
  for (const auto& [key, entry] : doc.at("hooks").items()) {
    if (!entry.is_object()) continue;
    const std::string name = framework_name(key), state = text_of(entry, "state"), why = text_of(entry, "why");
    const auto threads = entry.find("threads"), interval = entry.find("interval_ms");
    const bool by_thread = threads != entry.end() && threads->is_number_unsigned();
    const bool by_interval = interval != entry.end() && interval->is_number_unsigned();
    const std::string on_threads = by_thread ? fmt::format(" on {} thread(s)", threads->get<uint64_t>()) : "";
    if (state == "failed") {
      notes.push_back(fmt::format("{} did not attach: {}; its blocks are not followed", name, why));
    } else if (state == "off") {
      notes.push_back(fmt::format("{}: off ({})", name, why));
    } else if (state == "attached" && by_thread) {
      notes.push_back(
          fmt::format("{}: attached{} (the importing thread and those started after it)", name, on_threads));
    } else if (state == "attached" && by_interval) {
      const uint64_t ms = interval->get<uint64_t>();
      notes.push_back(fmt::format("{}: listed {}at out-of-memory errors and at exit{}", name,
                                  ms ? fmt::format("every {} ms, ", ms) : std::string(),
                                  why.empty() ? std::string() : fmt::format(" ({})", why)));
    } else if (state.empty() && by_thread) {
      notes.push_back(fmt::format("{}: installed{}, but {} handed out no block", name, on_threads, pool_name(key)));
    }
  }
  return notes;
}

HooksAnswer python_hooks_answer(const std::string& json_text) {
  const json doc = json::parse(json_text, nullptr, false);
  HooksAnswer out;
  if (!doc.is_object() || doc.value("format", "") != python_contract::kHooksState.format) return out;
  const auto writes = doc.find("writes");
  out.writes = writes != doc.end() && writes->is_boolean() && writes->get<bool>();
  out.answered = text_of(doc, "answered");
  return out;
}

HooksAnswer python_hooks_answer(const std::string& dir, uint64_t pid) {
  std::string text, error;
  if (!read_regular_file(python_hooks_path(dir, pid), kMaxHooksFileBytes, text, error, Links::Refuse)) return {};
  return python_hooks_answer(text);
}

std::string python_hooks_path(const std::string& dir, uint64_t pid) {
  const run_dir::Entry& file = *python_contract::kHooksState.file;
  return fmt::format("{}/{}{}{}", dir, file.prefix, pid, file.suffix);
}

void load_python_hooks(const std::string& dir, const ProcessTrace& process, std::vector<std::string>& notes) {
  const std::string path = python_hooks_path(dir, process.pid);
  if (access(path.c_str(), F_OK) != 0) return;  // not a Python process, or one older than this file
  std::string text, error;
  if (!read_regular_file(path, kMaxHooksFileBytes, text, error, Links::Refuse)) {
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
