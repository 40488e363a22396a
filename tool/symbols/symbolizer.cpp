#include "symbolizer.h"

#include "cache_file.h"
#include "safe_file.h"

#include <sys/stat.h>

#include <backtrace.h>
#include <cxxabi.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "elf_file.h"
#include "json_reading.h"

namespace cuaudit {

struct Symbolizer::ModuleState {
  backtrace_state* state = nullptr;  // null: the file cannot be used
  // libbacktrace loads the file it is given as "the executable". A position-independent file
  // (shared library or PIE) is then placed at the load address of *this* process's main
  // program (libbacktrace's elf.c: elf_add declines ET_DYN executables and phdr_callback adds
  // them with dlpi_addr of the first object). File offsets are shifted by that address.
  uint64_t lookup_base = 0;
  std::string why_unavailable;
};

namespace {

void ignore_error(void*, const char*, int) {}

int first_object_base(dl_phdr_info* info, size_t, void* out) {
  *static_cast<uint64_t*>(out) = info->dlpi_addr;
  return 1;  // the first object is the main program
}

uint64_t own_main_program_base() {
  static const uint64_t base = [] {
    uint64_t b = 0;
    dl_iterate_phdr(first_object_base, &b);
    return b;
  }();
  return base;
}

int collect_location(void* data, uintptr_t, const char* file, int line, const char* function) {
  auto* out = static_cast<std::vector<SourceLocation>*>(data);
  if (function || file) {
    SourceLocation loc{function ? demangle(function) : std::string(), file ? file : "", line, {}};
    if (function && loc.function != function) loc.mangled = function;
    out->push_back(std::move(loc));
  }
  return 0;
}

// The symbol table's name of the function holding an address: {demangled, as linked}.
void collect_symbol(void* data, uintptr_t, const char* name, uintptr_t, uintptr_t) {
  if (name) *static_cast<std::pair<std::string, std::string>*>(data) = {demangle(name), name};
}

}  // namespace

std::string demangle(const char* name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string result(out);
  free(out);
  return result;
}

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;  // libbacktrace states cannot be freed; they live until exit

namespace {
// libbacktrace never frees a state (it has no call for it): one per module file for the whole
// process, shared by every Symbolizer, so that each --snapshot-interval analysis does not read a
// module's debug information again and keep another copy (tens of MB for libc and libstdc++).
// Keyed by the file's identity as well as its path: a file replaced on disk is read anew.
backtrace_state* shared_backtrace_state(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return nullptr;
  const std::string key = fmt::format("{}\n{}:{}:{}:{}", path, st.st_dev, st.st_ino, st.st_size, st.st_mtime);
  struct Module {
    std::string path;  // libbacktrace keeps the pointer, not a copy: the name must live as long as the state
    backtrace_state* state = nullptr;
  };
  static std::mutex mutex;
  static std::map<std::string, Module> states;  // nodes never move
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = states.try_emplace(key);
  // The file is opened at the first lookup, by the name given here. Were the name gone by then,
  // libbacktrace would open /proc/self/exe instead and name cuaudit's own functions.
  if (fresh) {
    it->second.path = path;
    it->second.state = backtrace_create_state(it->second.path.c_str(), 1, ignore_error, nullptr);
  }
  return it->second.state;
}
}  // namespace

Symbolizer::ModuleState* Symbolizer::module_state(const ModuleInfo& module) {
  auto& slot = states_[module.path];
  if (slot) return slot.get();
  slot = std::make_unique<ModuleState>();
  const std::string problem = module_file_problem(module);
  std::string file = problem.empty() ? module.path : std::string();
  if (file.empty() || !has_debug_info(file)) {
    // A separate debug file stands for the module: its symbols and DWARF at the same addresses.
    if (std::string debug = find_debug_file(module, debug_search_); !debug.empty()) {
      file = std::move(debug);
    } else {
      // A stripped file still names its exported functions from its symbol table.
      slot->why_unavailable = fmt::format("{}; frames in it show addresses only: {}",
                                          problem.empty() ? module.path + " (no debug information)" : problem,
                                          debug_file_advice(module, debug_search_));
    }
  }
  if (!file.empty()) {
    slot->state = shared_backtrace_state(file);
    if (is_position_independent_elf(file)) slot->lookup_base = own_main_program_base();
  }
  return slot.get();
}

std::vector<report::Frame> Symbolizer::symbolize(uint64_t return_address, const ModuleInfo* module) {
  report::Frame base;
  base.pc = return_address;
  if (!module) return {base};
  base.module = module->path;
  base.module_offset = return_address - module->load_bias;

  // A return address points after the call; the call itself is one byte before.
  const uint64_t offset = return_address - 1 - module->load_bias;
  // The same module_cache_key as the last lookup's, without building the string.
  if (!last_cache_ || module->build_id != last_build_id_ || (module->build_id.empty() && module->path != last_path_)) {
    last_cache_ = &cache_[module_cache_key(*module)];
    last_build_id_ = module->build_id;
    last_path_ = module->path;
  }
  auto& by_offset = *last_cache_;
  auto cached = by_offset.find(offset);
  if (cached == by_offset.end()) {
    ModuleState* m = module_state(*module);
    // A module that cannot be read here names nothing: nothing to remember per address (a large
    // run has millions of them).
    if (!m->state) return {base};
    std::vector<SourceLocation> locations;
    {
      const uint64_t address = offset + m->lookup_base;
      backtrace_pcinfo(m->state, address, collect_location, ignore_error, &locations);
      // DWARF names internal functions without their parameters ("step"); the symbol table's
      // demangled name of the function holding the address is what users expect ("step(int)").
      // Inlined frames (all but the last location) keep their DWARF names.
      std::pair<std::string, std::string> symbol;  // demangled, as linked
      backtrace_syminfo(m->state, address, collect_symbol, ignore_error, &symbol);
      if (!symbol.first.empty()) {
        if (locations.empty()) locations.push_back({});
        SourceLocation& last = locations.back();
        if (last.function.empty() ||
            (last.function.find('(') == std::string::npos && symbol.first.find('(') != std::string::npos)) {
          last.function = symbol.first;
          last.mangled = symbol.second != symbol.first ? symbol.second : std::string();
        }
      }
    }
    cached = by_offset.emplace(offset, std::move(locations)).first;
  }
  if (cached->second.empty()) return {base};
  std::vector<report::Frame> frames;
  for (const SourceLocation& loc : cached->second) {
    report::Frame f = base;
    f.function = loc.function;
    f.file = loc.file;
    f.line = loc.line;
    f.mangled = loc.mangled;
    frames.push_back(std::move(f));
  }
  return frames;
}

std::string Symbolizer::why_unavailable(const std::string& module_path) const {
  auto it = states_.find(module_path);
  return it == states_.end() || !it->second ? std::string() : it->second->why_unavailable;
}

bool Symbolizer::load_cache(const std::string& path, std::string& error) {
  std::optional<nlohmann::json> document;
  if (!read_cache_document(path, "cuaudit.symbols.v1", "symbol cache", document, error)) return false;
  if (!document) return true;
  const nlohmann::json& doc = *document;
  try {
    for (const auto& [key, offsets] : doc.at("modules").items()) {
      for (const auto& [offset, locations] : offsets.items()) {
        std::vector<SourceLocation> list;
        for (const auto& l : locations)
          // A line that is no int is refused (a float's conversion is undefined: found by fuzz_run_dir).
          list.push_back({l.at("function"), l.at("file"), report::json_reading::number_of<int>(l.at("line"), "line"),
                          l.value("mangled", std::string())});
        cache_[key][std::stoull(offset, nullptr, 16)] = std::move(list);
      }
    }
  } catch (const std::exception& e) {
    error = unreadable_cache(path, "symbol cache", e);
    return false;
  }
  return true;
}

bool Symbolizer::save_cache(const std::string& path, std::string& error) const {
  nlohmann::json modules = nlohmann::json::object();
  for (const auto& [key, offsets] : cache_) {
    nlohmann::json entries = nlohmann::json::object();
    for (const auto& [offset, locations] : offsets) {
      if (locations.empty()) continue;  // unresolved here; maybe resolvable elsewhere
      nlohmann::json list = nlohmann::json::array();
      for (const auto& l : locations) {
        nlohmann::json entry = {{"function", l.function}, {"file", l.file}, {"line", l.line}};
        if (!l.mangled.empty()) entry["mangled"] = l.mangled;  // caches written before it lack it
        list.push_back(std::move(entry));
      }
      entries[fmt::format("{:x}", offset)] = std::move(list);
    }
    if (!entries.empty()) modules[key] = std::move(entries);
  }
  const std::string text = nlohmann::json{{"schema", "cuaudit.symbols.v1"}, {"modules", modules}}.dump(
                               1, ' ', false, nlohmann::json::error_handler_t::replace) +
                           "\n";
  if (!replace_file(path, text, error)) return false;
  return true;
}

}  // namespace cuaudit
