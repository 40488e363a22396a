#include "kernel_access.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache_file.h"
#include "cubin_functions.h"
#include "kernel_signature.h"
#include "run_dir.h"
#include "safe_file.h"

extern char** environ;

namespace cuaudit {
namespace {

constexpr size_t kMaxCubinBytes = size_t{2} << 30;
constexpr size_t kMaxSassJsonBytes = size_t{1} << 30;

bool executable(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Runs `argv` and returns what it wrote on standard output; false with `error` (its exit status
// and the start of what it wrote on standard error) when it could not run or failed.
bool capture_output(const std::vector<std::string>& argv, std::string& out, std::string& error,
                    const std::string& working_dir = {}) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    error = fmt::format("cannot make a pipe: {}", strerror(errno));
    return false;
  }
  char err_path[] = "/tmp/cuaudit-nvdisasm-XXXXXX";
  const int err_fd = mkstemp(err_path);
  if (err_fd >= 0) unlink(err_path);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  if (err_fd >= 0) posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  if (!working_dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, working_dir.c_str());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    if (err_fd >= 0) close(err_fd);
    error = fmt::format("cannot run {}: {}", argv[0], strerror(rc));
    return false;
  }
  char buffer[1 << 16];
  bool too_large = false;
  for (;;) {
    const ssize_t n = read(out_pipe[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() + static_cast<size_t>(n) > kMaxSassJsonBytes) {
      too_large = true;
      break;
    }
    out.append(buffer, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string said;
  if (err_fd >= 0) {
    said.resize(512);
    const ssize_t n = pread(err_fd, said.data(), said.size(), 0);
    said.resize(n > 0 ? static_cast<size_t>(n) : 0);
    close(err_fd);
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  }
  if (too_large) {
    error = fmt::format("{} printed more than {} bytes", argv[0], kMaxSassJsonBytes);
    return false;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = fmt::format("{} failed ({}){}", argv[0],
                        WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                          : fmt::format("signal {}", WTERMSIG(status)),
                        said.empty() ? std::string() : ": " + said);
    return false;
  }
  return true;
}

std::string hex(uint64_t hash) { return fmt::format("{:016x}", hash); }

// What a pointer parameter's declared pointee requires (0: not a pointer, or not known).
uint32_t declared_alignment(const std::string& kernel, uint16_t index) {
  std::unique_ptr<char, decltype(&free)> demangled(demangle_kernel_name(kernel.c_str()), &free);
  KernelSignature signature;
  if (!demangled || !parse_kernel_params(demangled.get(), signature) || index >= signature.count) return 0;
  return signature.params[index].is_pointer ? signature.params[index].alignment : 0;
}

const char* not_kept_reason(trace::ModuleCodeStatus status) {
  switch (status) {
    case trace::ModuleCodeStatus::NotCode:
      return "the driver handed over neither a cubin nor a fatbin";
    case trace::ModuleCodeStatus::OverLimit:
      return "over CUAUDIT_KERNEL_CODE_LIMIT_MB";
    case trace::ModuleCodeStatus::WriteFailed:
      return "the cubin could not be written beside the trace";
    case trace::ModuleCodeStatus::Saved:
    case trace::ModuleCodeStatus::SavedFatbin:
      break;
  }
  return nullptr;
}

// `name` (nvdisasm, cuobjdump) where the toolkit is: beside `beside` when given, else
// CUAUDIT_NVDISASM's directory, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin. Empty when none is there.
std::string find_toolkit_program(const std::string& name, const std::string& beside) {
  std::vector<std::string> dirs;
  if (!beside.empty()) {
    dirs.push_back(beside.substr(0, beside.rfind('/') == std::string::npos ? 0 : beside.rfind('/')));
  } else {
    if (const char* env = getenv("CUAUDIT_NVDISASM"); env && *env) {
      const std::string path = env;
      if (name == "nvdisasm") return executable(path) ? path : std::string();
      dirs.push_back(path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/')));
    }
    if (const char* path = getenv("PATH")) {
      std::string_view rest = path;
      while (!rest.empty()) {
        const size_t colon = rest.find(':');
        if (colon != 0) dirs.emplace_back(rest.substr(0, colon));
        rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      }
    }
    if (const char* home = getenv("CUDA_HOME"); home && *home) dirs.push_back(std::string(home) + "/bin");
    dirs.push_back("/usr/local/cuda/bin");
  }
  for (const std::string& dir : dirs) {
    if (executable(dir + "/" + name)) return dir + "/" + name;
  }
  return {};
}

}  // namespace

KernelRequirements::KernelRequirements(std::string run_dir, std::string nvdisasm)
    : run_dir_(std::move(run_dir)), nvdisasm_(std::move(nvdisasm)) {}

bool KernelRequirements::find_nvdisasm() {
  if (nvdisasm_found_) return *nvdisasm_found_;
  if (!nvdisasm_.empty()) {
    nvdisasm_found_ = executable(nvdisasm_);  // --nvdisasm: that one or none
  } else {
    nvdisasm_ = find_toolkit_program("nvdisasm", "");
    nvdisasm_found_ = !nvdisasm_.empty();
  }
  return *nvdisasm_found_;
}

// The cubins of a kept fat binary, extracted once beside it (kernel-code/<hash>.elf/) by the
// toolkit's cuobjdump, which also undoes the compression recent toolkits apply.
std::vector<std::string> KernelRequirements::extract(const std::string& fatbin) {
  const std::string dir = fatbin.substr(0, fatbin.size() - std::string(".fatbin").size()) + ".elf";
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (!find_nvdisasm()) return {};
    const std::string cuobjdump = find_toolkit_program("cuobjdump", nvdisasm_);
    if (cuobjdump.empty()) {
      failed_[fatbin] = fmt::format("no cuobjdump beside {} to take the cubins out of the fat binary", nvdisasm_);
      return {};
    }
    const std::string partial = dir + ".partial";
    std::string ignored, error;
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return {};
    if (!capture_output({cuobjdump, "-xelf", "all", fatbin}, ignored, error, partial) ||
        rename(partial.c_str(), dir.c_str()) != 0) {
      failed_[fatbin] = error.empty() ? fmt::format("cannot keep the cubins of {}", fatbin) : error;
      return {};
    }
  }
  std::vector<std::string> cubins;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(d)) {
      const std::string name = entry->d_name;
      if (name.size() > 6 && name.compare(name.size() - 6, 6, ".cubin") == 0) cubins.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  std::sort(cubins.begin(), cubins.end());
  return cubins;
}

const KernelRequirements::Kernel* KernelRequirements::analyze(const ProcessTrace& trace, const std::string& kernel) {
  if (auto it = kernels_.find(kernel); it != kernels_.end()) return &it->second;
  if (failed_.count(kernel) || without_code_.count(kernel) || without_nvdisasm_.count(kernel)) return nullptr;
  // The first kept cubin that defines the kernel: its module was loaded before the launch.
  for (const ModuleCodeFact& module : trace.module_code) {
    if (const char* why = not_kept_reason(module.status)) {
      modules_not_kept_.insert(why);
      continue;
    }
    const bool fatbin = module.status == trace::ModuleCodeStatus::SavedFatbin;
    const std::string path =
        fmt::format("{}/{}/{}.{}", run_dir_, kKernelCodeDir, hex(module.hash), fatbin ? "fatbin" : "cubin");
    std::vector<std::string> cubins;
    if (fatbin) {
      struct stat st;
      if (stat(path.c_str(), &st) == 0) cubins = extract(path);
    } else {
      cubins.push_back(path);
    }
    for (const std::string& cubin : cubins) {
      std::string image, error;
      if (!read_regular_file(cubin, kMaxCubinBytes, image, error)) continue;  // said below if no cubin has it
      for (const CubinFunction& function : cubin_functions(image)) {
        if (function.name != kernel) continue;
        if (!find_nvdisasm()) {
          without_nvdisasm_.insert(kernel);
          return nullptr;
        }
        std::string json;
        if (!capture_output({nvdisasm_, "-json", "-fun", std::to_string(function.symbol_index), cubin}, json, error)) {
          failed_[kernel] = error;
          return nullptr;
        }
        Kernel result;
        result.cubin = hex(module.hash);
        try {
          for (const KernelAccess& access : analyze_sass_json(json, function.param_base)) {
            if (access.name == kernel) result.params = access.params;
          }
        } catch (const std::exception& e) {
          failed_[kernel] = e.what();
          return nullptr;
        }
        changed_ = true;
        return &kernels_.emplace(kernel, std::move(result)).first->second;
      }
    }
  }
  without_code_.insert(kernel);
  return nullptr;
}

std::optional<ParamAccess> KernelRequirements::at(const ProcessTrace& trace, const std::string& kernel,
                                                  uint32_t buffer_offset) {
  const Kernel* k = analyze(trace, kernel);
  if (!k) return std::nullopt;
  const auto it = k->params.find(buffer_offset);
  return it == k->params.end() ? ParamAccess{} : it->second;
}

std::optional<LaunchParamFact> KernelRequirements::judge(const ProcessTrace& trace, const LaunchParamFact& low_bits) {
  const auto name = trace.kernels.find(low_bits.kernel_id);
  if (name == trace.kernels.end()) return std::nullopt;
  const std::optional<ParamAccess> access = at(trace, name->second, low_bits.buffer_offset);
  if (!access) return std::nullopt;
  const uint32_t required = access->required_alignment();
  if (required <= 1 || low_bits.value % required == 0) return std::nullopt;
  // A pointer parameter whose declared type already demands as much was checked for it in the
  // target (a double* at +4): one finding, from the type.
  if (low_bits.member_offset == 0 && declared_alignment(name->second, low_bits.param_index) >= required)
    return std::nullopt;
  LaunchParamFact judged = low_bits;
  judged.problem = trace::LaunchProblem::Misaligned;
  judged.alignment = required;
  judged.from_code = true;
  return judged;
}

std::vector<std::string> KernelRequirements::notes() const {
  std::vector<std::string> notes;
  if (!without_nvdisasm_.empty()) {
    notes.push_back(fmt::format(
        "nvdisasm (CUDA toolkit) was not found{}: {} kernel(s) given pointers that are not 16-byte aligned were not "
        "checked against their machine code; put the toolkit's bin directory on PATH or give --nvdisasm PATH",
        nvdisasm_.empty() ? std::string() : fmt::format(" at {}", nvdisasm_), without_nvdisasm_.size()));
  }
  if (!without_code_.empty()) {
    std::string why;
    for (const std::string& reason : modules_not_kept_) why += (why.empty() ? "" : "; ") + reason;
    notes.push_back(fmt::format(
        "the machine code of {} kernel(s) given pointers that are not 16-byte aligned was not kept{} (first: {}): "
        "those launches were not checked against what the kernels' code requires",
        without_code_.size(), why.empty() ? std::string() : " (" + why + ")", *without_code_.begin()));
  }
  for (const auto& [kernel, why] : failed_) {
    notes.push_back(fmt::format("the machine code of kernel {} could not be read: {}", kernel, why));
  }
  return notes;
}

bool KernelRequirements::load_cache(const std::string& path, std::string& error) {
  std::optional<nlohmann::json> document;
  if (!read_cache_document(path, "cuaudit.kernel-access.v1", "kernel-access cache", document, error)) return false;
  if (!document) return true;
  const nlohmann::json& doc = *document;
  try {
    for (const auto& [name, entry] : doc.at("kernels").items()) {
      Kernel k;
      k.cubin = entry.at("cubin").get<std::string>();
      for (const auto& [offset, access] : entry.at("params").items()) {
        ParamAccess p;
        p.width = access.at("width").get<uint32_t>();
        p.guarded = access.at("guarded").get<bool>();
        k.params[static_cast<uint32_t>(std::stoul(offset))] = p;
      }
      kernels_[name] = std::move(k);
    }
  } catch (const std::exception& e) {
    error = unreadable_cache(path, "kernel-access cache", e);
    return false;
  }
  return true;
}

bool KernelRequirements::save_cache(const std::string& path, std::string& error) const {
  nlohmann::json kernels = nlohmann::json::object();
  for (const auto& [name, k] : kernels_) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [offset, access] : k.params)
      params[std::to_string(offset)] = {{"width", access.width}, {"guarded", access.guarded}};
    kernels[name] = {{"cubin", k.cubin}, {"params", std::move(params)}};
  }
  const std::string text = nlohmann::json{{"schema", "cuaudit.kernel-access.v1"}, {"kernels", kernels}}.dump(1) + "\n";
  return replace_file(path, text, error);
}

}  // namespace cuaudit
