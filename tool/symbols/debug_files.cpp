#include "debug_files.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "elf_file.h"

namespace cuaudit {

namespace {

constexpr const char* kSystemDebugDirectory = "/usr/lib/debug";

// A file that cannot be read has no build id (read_elf_build_id gives ""), so it never matches.
bool carries_build_id(const std::string& path, const std::string& build_id) {
  return !build_id.empty() && read_elf_build_id(path) == build_id && has_debug_info(path);
}

// DIR/.build-id/ab/cdef....debug: the first byte of the id names the folder.
std::string build_id_path(const std::string& directory, const std::string& build_id) {
  return fmt::format("{}/.build-id/{}/{}.debug", directory, build_id.substr(0, 2), build_id.substr(2));
}

// elfutils' client library, loaded once: dlopen'ed, not linked, so that the tool runs on machines
// without it (the GPU machines have no distribution packages).
struct DebuginfodClient {
  decltype(&debuginfod_begin) begin = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
  decltype(&debuginfod_end) end = nullptr;
  bool loaded() const { return begin && find_debuginfo && end; }
};

const DebuginfodClient& debuginfod_library() {
  static const DebuginfodClient client = [] {
    DebuginfodClient c;
    void* library = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) return c;
    c.begin = reinterpret_cast<decltype(c.begin)>(dlsym(library, "debuginfod_begin"));
    c.find_debuginfo = reinterpret_cast<decltype(c.find_debuginfo)>(dlsym(library, "debuginfod_find_debuginfo"));
    c.end = reinterpret_cast<decltype(c.end)>(dlsym(library, "debuginfod_end"));
    return c;
  }();
  return client;
}

const char* debuginfod_urls() {
  const char* urls = getenv("DEBUGINFOD_URLS");
  return urls && *urls ? urls : nullptr;
}

// The debug file a debuginfod server has for the build id, downloaded into the client's cache
// (DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client); empty when none has it.
std::string from_debuginfod(const std::string& build_id) {
  const DebuginfodClient& library = debuginfod_library();
  if (!library.loaded() || build_id.size() < 2) return {};
  static std::mutex mutex;  // one download at a time: a client is not shared between threads
  std::lock_guard<std::mutex> lock(mutex);
  debuginfod_client* client = library.begin();
  if (!client) return {};
  char* path = nullptr;
  // The id as hex text (length 0), as debuginfod-find passes it.
  const int fd = library.find_debuginfo(client, reinterpret_cast<const unsigned char*>(build_id.c_str()), 0, &path);
  std::string found;
  if (fd >= 0) {
    close(fd);
    if (path) found = path;
  }
  free(path);
  library.end(client);
  return found;
}

}  // namespace

std::vector<std::string> debug_directories(const DebugFileSearch& search) {
  std::vector<std::string> dirs = search.directories;
  bool system = false;
  for (const std::string& d : dirs) system |= d == kSystemDebugDirectory;
  if (!system) dirs.push_back(kSystemDebugDirectory);
  return dirs;
}

std::string find_debug_file(const ModuleInfo& module, const DebugFileSearch& search) {
  const std::vector<std::string> dirs = debug_directories(search);
  if (module.build_id.size() > 2) {
    for (const std::string& dir : dirs) {
      const std::string path = build_id_path(dir, module.build_id);
      if (carries_build_id(path, module.build_id)) return path;
    }
  }
  if (const std::string link = read_debuglink(module.path); !link.empty()) {
    const std::filesystem::path folder = std::filesystem::path(module.path).parent_path();
    std::vector<std::string> candidates = {(folder / link).string(), (folder / ".debug" / link).string()};
    for (const std::string& dir : dirs) candidates.push_back(dir + (folder / link).string());
    for (const std::string& path : candidates) {
      if (path != module.path && carries_build_id(path, module.build_id)) return path;
    }
  }
  if (debuginfod_urls() && !module.build_id.empty()) {
    if (std::string path = from_debuginfod(module.build_id); !path.empty() && has_debug_info(path)) return path;
  }
  return {};
}

std::string debug_file_advice(const ModuleInfo& module, const DebugFileSearch& search) {
  if (module.build_id.size() <= 2) {
    // Without an id no separate file can be matched: only the file that ran, with its own DWARF.
    return access(module.path.c_str(), R_OK) == 0
               ? "rebuild it with -g (and link with --build-id, so that a separate debug file can be matched to it)"
               : "report the run where it ran, or put the module at that path (it has no build id, so no separate "
                 "debug file can stand for it; what a report resolves is kept in the run's symbols.json)";
  }
  std::string where;
  for (const std::string& dir : debug_directories(search)) where += (where.empty() ? "" : ", ") + dir;
  std::string advice = fmt::format(
      "install its debug symbols (the distribution's -dbgsym or -debuginfo package), or give "
      "--debug-file-directory DIR with DIR{} (none under {})",
      build_id_path("", module.build_id), where);
  if (const char* urls = debuginfod_urls()) {
    return advice + (debuginfod_library().loaded()
                         ? fmt::format("; the debuginfod servers of DEBUGINFOD_URLS ({}) have none", urls)
                         : std::string("; DEBUGINFOD_URLS is set but libdebuginfod.so.1 is not installed here"));
  }
  return advice + ", or set DEBUGINFOD_URLS to a debuginfod server that has it";
}

}  // namespace cuaudit
