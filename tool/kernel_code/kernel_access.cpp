#include "kernel_access.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache_file.h"
#include "cubin_functions.h"
#include "json_reading.h"
#include "kernel_names.h"
#include "run_dir.h"
#include "safe_file.h"
#include "toolkit_programs.h"

namespace cuaudit {
namespace {

std::string hex(uint64_t hash) { return fmt::format("{:016x}", hash); }

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
  const std::string folder = dir.substr(0, dir.rfind('/'));
  // A run directory received from elsewhere may hold links where cuobjdump would write: only
  // real directories are used, never what a link points to.
  struct stat st;
  if (lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    failed_[fatbin] = fmt::format("{} is not a directory (a link?): the fat binary's cubins are not taken out", folder);
    return {};
  }
  if (lstat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    failed_[fatbin] = fmt::format("{} is not a directory (a link?): its cubins are not read", dir);
    return {};
  }
  if (lstat(dir.c_str(), &st) != 0) {
    if (!find_nvdisasm()) return {};
    const std::string cuobjdump = find_toolkit_program("cuobjdump", nvdisasm_);
    if (cuobjdump.empty()) {
      failed_[fatbin] = fmt::format("no cuobjdump beside {} to take the cubins out of the fat binary", nvdisasm_);
      return {};
    }
    // A fresh private directory (mkdtemp), renamed into place when cuobjdump is done.
    std::string partial = dir + ".partial-XXXXXX";
    if (!mkdtemp(partial.data())) {
      failed_[fatbin] = fmt::format("cannot create {}: {}", partial, strerror(errno));
      return {};
    }
    std::string ignored, error;
    const bool extracted = capture_output({cuobjdump, "-xelf", "all", fatbin}, ignored, error, partial);
    if (!extracted || rename(partial.c_str(), dir.c_str()) != 0) {
      remove_run_dir(partial);  // links in it are removed, never followed
      if (extracted && lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        // Another report of this run took them out meanwhile: its copy is read.
      } else {
        failed_[fatbin] = error.empty() ? fmt::format("cannot keep the cubins of {}", fatbin) : error;
        return {};
      }
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

// Every kernel of the process that has launch facts and is not in the cache, at once: each kept
// cubin is read once, and nvdisasm runs once per cubin on the kernels wanted from it (the first
// cubin that defines a kernel: its module was loaded before the launch), those runs in parallel.
void KernelRequirements::prepare(const ProcessTrace& trace, const KernelSelection& selected) {
  if (analyzed_.insert(&trace).second) analyze_all(trace, selected);
}

namespace {

// One nvdisasm run: the wanted kernels of one cubin that share a parameter base.
struct Batch {
  std::string cubin, module_hash;
  uint32_t param_base = 0x210;
  std::vector<uint32_t> symbols;
  std::vector<std::string> names;
  std::string json, error;
  bool ran = false;
};

// The runs that read every wanted kernel from the first kept module that defines it; the kernels
// found are taken out of `wanted`, the reasons modules were not kept go to `not_kept`.
// `extract` gives a kept fat binary's cubins.
std::vector<Batch> batches_for(const ProcessTrace& trace, const std::string& run_dir,
                               const std::function<std::vector<std::string>(const std::string&)>& extract,
                               std::set<std::string>& wanted, std::set<std::string>& not_kept) {
  std::vector<Batch> batches;
  for (const ModuleCodeFact& module : trace.module_code) {
    if (wanted.empty()) break;
    if (const char* why = not_kept_reason(module.status)) {
      not_kept.insert(why);
      continue;
    }
    const bool fatbin = module.status == trace::ModuleCodeStatus::SavedFatbin;
    const std::string path = kept_module_code(run_dir, module.hash, fatbin);
    std::vector<std::string> cubins;
    struct stat st;
    if (!fatbin) {
      cubins.push_back(path);
    } else if (stat(path.c_str(), &st) == 0) {
      cubins = extract(path);
    }
    for (const std::string& cubin : cubins) {
      std::string image, error;
      if (!read_regular_file(cubin, kMaxCubinBytes, image, error, Links::Refuse))
        continue;                         // said below if no cubin has it
      std::map<uint32_t, Batch> by_base;  // one nvdisasm run per cubin and parameter base
      for (const CubinFunction& function : cubin_functions(image)) {
        if (!wanted.erase(function.name)) continue;
        Batch& batch = by_base[function.param_base];
        batch.cubin = cubin, batch.module_hash = hex(module.hash), batch.param_base = function.param_base;
        batch.symbols.push_back(function.symbol_index);
        batch.names.push_back(function.name);
      }
      for (auto& [base, batch] : by_base) batches.push_back(std::move(batch));
    }
  }
  return batches;
}

// nvdisasm takes about half a second to start: the runs go side by side.
void run_nvdisasm(const std::string& nvdisasm, std::vector<Batch>& batches) {
  const size_t width = std::max(1u, std::thread::hardware_concurrency());
  for (size_t first = 0; first < batches.size(); first += width) {
    std::vector<std::thread> running;
    for (size_t i = first; i < std::min(batches.size(), first + width); ++i) {
      running.emplace_back([&nvdisasm, &batch = batches[i]] {
        std::string symbols;
        for (uint32_t symbol : batch.symbols) symbols += (symbols.empty() ? "" : ",") + std::to_string(symbol);
        batch.ran = capture_output({nvdisasm, "-json", "-fun", symbols, batch.cubin}, batch.json, batch.error);
      });
    }
    for (std::thread& t : running) t.join();
  }
}

}  // namespace

void KernelRequirements::analyze_all(const ProcessTrace& trace, const KernelSelection& selected) {
  std::set<std::string> wanted;
  for (const auto& [id, name] : trace.kernels) {
    if (!kernels_.count(name) && !failed_.count(name) && (!selected || selected(name))) wanted.insert(name);
  }
  std::vector<Batch> batches = batches_for(
      trace, run_dir_, [this](const std::string& fatbin) { return extract(fatbin); }, wanted, modules_not_kept_);
  without_code_.insert(wanted.begin(), wanted.end());
  if (batches.empty()) return;
  if (!find_nvdisasm()) {
    for (const Batch& batch : batches) without_nvdisasm_.insert(batch.names.begin(), batch.names.end());
    return;
  }
  run_nvdisasm(nvdisasm_, batches);
  for (Batch& batch : batches) {
    if (!batch.ran) {
      for (const std::string& name : batch.names) failed_[name] = batch.error;
      continue;
    }
    std::vector<KernelAccess> read;
    try {
      read = analyze_sass_json(batch.json, batch.param_base);
    } catch (const std::exception& e) {
      for (const std::string& name : batch.names) failed_[name] = e.what();
      continue;
    }
    for (const std::string& name : batch.names) {
      Kernel k;
      k.cubin = batch.module_hash;
      for (const KernelAccess& access : read) {
        if (access.name == name) k.params = access.params;
      }
      kernels_[name] = std::move(k);
    }
    changed_ = true;
  }
}

std::optional<ParamAccess> KernelRequirements::at(const ProcessTrace& trace, const std::string& kernel,
                                                  uint32_t buffer_offset) {
  asked_.insert(kernel);
  if (analyzed_.insert(&trace).second) analyze_all(trace, nullptr);
  const auto k = kernels_.find(kernel);
  if (k == kernels_.end()) return std::nullopt;
  const auto it = k->second.params.find(buffer_offset);
  return it == k->second.params.end() ? ParamAccess{} : it->second;
}

std::optional<LaunchParamFact> KernelRequirements::judge(const ProcessTrace& trace, const Event& low_bits) {
  const LaunchParamFact& fact = low_bits.launch_param();
  const auto name = trace.kernels.find(fact.kernel_id);
  if (name == trace.kernels.end()) return std::nullopt;
  LaunchParamFact judged = fact;
  judged.problem = trace::LaunchProblem::Misaligned;
  judged.alignment_from = AlignmentSource::Code;
  if (const std::optional<ParamAccess> access = at(trace, name->second, fact.buffer_offset))
    judged.alignment = access->required_alignment();
  const DeclaredPointer* declared =
      declared_.at(trace, name->second, low_bits.stack_id, fact.param_index, fact.member_offset);
  if (declared && declared->alignment > judged.alignment) {
    judged.alignment = declared->alignment;
    judged.alignment_from = AlignmentSource::DebugInfo;
    judged.declared_type = &declared->pointee;
  }
  if (judged.alignment <= 1 || fact.value % judged.alignment == 0) return std::nullopt;
  // A pointer parameter whose type in the kernel's name already demands as much was checked for it
  // in the target (a double* at +4): one finding, from the type.
  if (fact.member_offset == 0 && kernel_pointer_alignment(name->second, fact.param_index) >= judged.alignment)
    return std::nullopt;
  return judged;
}

bool KernelRequirements::dereferences(const ProcessTrace& trace, const Event& word) {
  const LaunchParamFact& fact = word.launch_param();
  const auto name = trace.kernels.find(fact.kernel_id);
  if (name == trace.kernels.end()) return false;
  const std::optional<ParamAccess> access = at(trace, name->second, fact.buffer_offset);
  return access && access->width > 0;
}

std::optional<LaunchParamFact> KernelRequirements::judge_word(const ProcessTrace& trace, const Event& word) {
  const LaunchParamFact& fact = word.launch_param();
  if (fact.problem == trace::LaunchProblem::LowBits) return judge(trace, word);
  if (!fact.host_readable) return fact;
  if (!dereferences(trace, word)) return std::nullopt;
  LaunchParamFact read_through = fact;
  read_through.code_dereferences = true;
  return read_through;
}

std::vector<std::string> KernelRequirements::notes() const {
  // Only the kernels a judgement needed: the others were analyzed in passing.
  const auto asked = [this](const std::set<std::string>& kernels) {
    std::vector<std::string> out;
    for (const std::string& k : kernels) {
      if (asked_.count(k)) out.push_back(k);
    }
    return out;
  };
  std::vector<std::string> notes;
  if (const auto kernels = asked(without_nvdisasm_); !kernels.empty()) {
    notes.push_back(fmt::format(
        "nvdisasm (CUDA toolkit) was not found{}: {} kernel(s) given pointers that are not 16-byte aligned, or that "
        "point into host memory, were not checked against their machine code; put the toolkit's bin directory on PATH "
        "or give --nvdisasm PATH",
        nvdisasm_.empty() ? std::string() : fmt::format(" at {}", nvdisasm_), kernels.size()));
  }
  if (const auto kernels = asked(without_code_); !kernels.empty()) {
    std::string why;
    for (const std::string& reason : modules_not_kept_) why += (why.empty() ? "" : "; ") + reason;
    notes.push_back(fmt::format(
        "the machine code of {} kernel(s) given pointers that are not 16-byte aligned, or that point into host "
        "memory, was not kept{} (first: {}): "
        "those launches were not checked against what the kernels' code requires",
        kernels.size(), why.empty() ? std::string() : " (" + why + ")", kernels.front()));
  }
  for (const auto& [kernel, why] : failed_) {
    const bool fatbin = kernel.size() > 7 && kernel.compare(kernel.size() - 7, 7, ".fatbin") == 0;
    if (fatbin) notes.push_back(fmt::format("the kernels of {} could not be read: {}", kernel, why));
    if (!fatbin && asked_.count(kernel))
      notes.push_back(fmt::format("the machine code of kernel {} could not be read: {}", kernel, why));
  }
  for (std::string& note : declared_.notes(asked_)) notes.push_back(std::move(note));
  return notes;
}

bool KernelRequirements::load_cache(const std::string& path, std::string& error) {
  std::optional<nlohmann::json> document;
  if (!read_cache_document(path, "cuaudit.kernel-access.v1", "kernel-access cache", document, error)) return false;
  if (!document) return true;
  const nlohmann::json& doc = *document;
  try {
    if (doc.contains("declared")) declared_.from_json(doc.at("declared"));  // caches before it have none
    for (const auto& [name, entry] : doc.at("kernels").items()) {
      Kernel k;
      k.cubin = entry.at("cubin").get<std::string>();
      for (const auto& [offset, access] : entry.at("params").items()) {
        ParamAccess p;
        p.width = report::json_reading::number_of<uint32_t>(access.at("width"), "width");
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
  const nlohmann::json doc = {
      {"schema", "cuaudit.kernel-access.v1"}, {"kernels", kernels}, {"declared", declared_.to_json()}};
  const std::string text = doc.dump(1) + "\n";
  return replace_file(path, text, error);
}

}  // namespace cuaudit
