#include "run_dir.h"

#include "safe_file.h"

#include <sys/stat.h>

#include <dirent.h>
#include <ftw.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace cuaudit {
namespace {

constexpr const char* kRunInfoSchema = "cuaudit.run.v1";

nlohmann::json optional_json(const std::optional<int>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// An exit status or signal number: null, or an integer that fits (99999999999 is damage, not a
// status to wrap).
std::optional<int> status_field(const nlohmann::json& doc, const char* field, bool required) {
  const auto it = doc.find(field);
  if (it == doc.end() && required) throw std::runtime_error(fmt::format("no \"{}\"", field));
  if (it == doc.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<int64_t>() < INT_MIN || it->get<int64_t>() > INT_MAX ||
      (it->is_number_unsigned() && it->get<uint64_t>() > INT_MAX))
    throw std::runtime_error(fmt::format("\"{}\" is not an exit status or signal number", field));
  return static_cast<int>(it->get<int64_t>());
}

}  // namespace

bool write_run_info(const std::string& dir, const RunInfo& info, std::string& error) {
  nlohmann::json doc = {{"schema", kRunInfoSchema},
                        {"command", info.command},
                        {"pid", info.pid},
                        {"exit_code", optional_json(info.exit_code)},
                        {"signal", optional_json(info.signal)},
                        {"forwarded_signal", optional_json(info.forwarded_signal)},
                        {"killed_after_signal", optional_json(info.killed_after_signal)},
                        {"cuaudit_version", info.cuaudit_version}};
  if (!info.still_running.empty()) doc["still_running"] = info.still_running;
  if (!info.trace_bytes.empty()) {
    nlohmann::json sizes = nlohmann::json::object();
    for (const auto& [pid, bytes] : info.trace_bytes) sizes[std::to_string(pid)] = bytes;
    doc["trace_bytes"] = std::move(sizes);
  }
  if (info.launch_params_recorded && info.resources_recorded)
    doc["recorded"] = {{"launch_params", *info.launch_params_recorded}, {"resources", *info.resources_recorded}};
  const std::string path = dir + "/" + kRunInfoFile;
  return replace_file(path, doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", error);
}

std::optional<RunInfo> read_run_info(const std::string& dir) {
  const std::string path = dir + "/" + kRunInfoFile;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return std::nullopt;  // no run.json: a standalone run
  std::string text, error;
  if (!read_regular_file(path, 16 << 20, text, error, Links::Refuse)) throw std::runtime_error(error);
  try {
    const auto doc = nlohmann::json::parse(text);
    if (!doc.is_object() || doc.value("schema", "") != kRunInfoSchema) {
      throw std::runtime_error(fmt::format("not of schema {}", kRunInfoSchema));
    }
    RunInfo info;
    info.command = doc.at("command").get<std::vector<std::string>>();
    info.pid = doc.at("pid").get<uint64_t>();
    info.exit_code = status_field(doc, "exit_code", true);
    info.signal = status_field(doc, "signal", true);
    info.forwarded_signal = status_field(doc, "forwarded_signal", false);
    info.killed_after_signal = status_field(doc, "killed_after_signal", false);
    info.cuaudit_version = doc.value("cuaudit_version", "");
    if (const auto still = doc.find("still_running"); still != doc.end() && !still->is_null())
      info.still_running = still->get<std::vector<uint64_t>>();
    if (const auto sizes = doc.find("trace_bytes"); sizes != doc.end() && !sizes->is_null()) {
      for (const auto& [pid, bytes] : sizes->items()) info.trace_bytes[std::stoull(pid)] = bytes.get<uint64_t>();
    }
    if (const auto recorded = doc.find("recorded"); recorded != doc.end() && !recorded->is_null()) {
      info.launch_params_recorded = recorded->at("launch_params").get<bool>();
      info.resources_recorded = recorded->at("resources").get<bool>();
    }
    return info;
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{} is damaged: {}", path, e.what()));
  }
}

std::vector<std::string> list_traces(const std::string& dir) {
  std::vector<std::string> traces;
  const std::string suffix = run_dir::Trace.suffix;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* entry = readdir(d)) {
      const std::string name = entry->d_name;
      // Not compacted-<pid>.cutrace: the beginning of a trace, which reading the trace reads too.
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
          !pid_in_entry_name(name, run_dir::CompactedTrace))
        traces.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  std::sort(traces.begin(), traces.end());
  return traces;
}

std::optional<uint64_t> pid_in_entry_name(const std::string& name, const run_dir::Entry& entry) {
  const std::string prefix = entry.prefix, suffix = entry.suffix;
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 10 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(digits);
}

std::vector<uint64_t> processes_with(const std::string& dir, const run_dir::Entry& entry) {
  std::vector<uint64_t> pids;
  DIR* d = opendir(dir.c_str());
  if (!d) return pids;
  while (const dirent* e = readdir(d)) {
    if (const std::optional<uint64_t> pid = pid_in_entry_name(e->d_name, entry)) pids.push_back(*pid);
  }
  closedir(d);
  return pids;
}

namespace {
// nftw's callback, bottom up (FTW_DEPTH) and without following links (FTW_PHYS): a link is
// removed, never what it points to.
int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  const int rc = type == FTW_DP ? rmdir(path) : unlink(path);
  return rc == 0 ? 0 : 1;
}
}  // namespace

bool remove_run_dir(const std::string& dir) { return nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0; }

std::string kept_module_code(const std::string& dir, uint64_t hash, bool fatbin) {
  return fmt::format("{}/{}/{:016x}.{}", dir, kKernelCodeDir, hash, fatbin ? "fatbin" : "cubin");
}

std::string signal_name(int signal) {
  if (const char* abbrev = sigabbrev_np(signal)) return fmt::format("SIG{}", abbrev);
  return fmt::format("signal {}", signal);
}

}  // namespace cuaudit
