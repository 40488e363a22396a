#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "debug_files.h"
#include "elf_file.h"
#include "temp_dir.h"

// The DWARF fixture is built by nvcc (tests/CMakeLists.txt); a build without nvcc has no file to read.
#ifdef CUAUDIT_DEBUG_TYPES_FIXTURE
using namespace cuaudit;
using cuaudit::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// A file built with -g and a build id (the unit tests' DWARF fixture).
const std::string kWithDwarf = CUAUDIT_DEBUG_TYPES_FIXTURE;

// Unsets DEBUGINFOD_URLS while it lives: a developer's machine may name a server.
struct NoDebuginfod {
  std::string saved;
  bool was_set;
  NoDebuginfod() : was_set(getenv("DEBUGINFOD_URLS") != nullptr) {
    if (was_set) saved = getenv("DEBUGINFOD_URLS");
    unsetenv("DEBUGINFOD_URLS");
  }
  ~NoDebuginfod() {
    if (was_set) setenv("DEBUGINFOD_URLS", saved.c_str(), 1);
  }
};

}  // namespace

TEST_CASE("a file's own DWARF, its build id and its .gnu_debuglink are read from its sections") {
  CHECK(has_debug_info(kWithDwarf));
  CHECK(read_elf_build_id(kWithDwarf).size() >= 16);
  CHECK(read_debuglink(kWithDwarf).empty());
  CHECK_FALSE(has_debug_info("/nonexistent/file.so"));
  CHECK(read_debuglink("/nonexistent/file.so").empty());
}

TEST_CASE("/usr/lib/debug is searched last, once") {
  CHECK(debug_directories({}) == std::vector<std::string>{"/usr/lib/debug"});
  CHECK(debug_directories({{"/a", "/b"}}) == std::vector<std::string>{"/a", "/b", "/usr/lib/debug"});
  CHECK(debug_directories({{"/usr/lib/debug", "/a"}}) == std::vector<std::string>{"/usr/lib/debug", "/a"});
}

TEST_CASE("a debug file is found under a directory by the recorded build id, and only with that id") {
  NoDebuginfod quiet;
  TempDir dir;
  const std::string id = read_elf_build_id(kWithDwarf);
  REQUIRE(!id.empty());
  const fs::path by_id = dir.path / ".build-id" / id.substr(0, 2) / (id.substr(2) + ".debug");
  fs::create_directories(by_id.parent_path());
  fs::copy_file(kWithDwarf, by_id);
  // The module's own file need not be here: the run may come from another machine.
  ModuleInfo module{0, 0, 0, "/nonexistent/libgone.so", id};
  CHECK(find_debug_file(module, {{dir.path.string()}}) == by_id.string());
  CHECK(find_debug_file(module, {}).empty());  // not under /usr/lib/debug
  // Another build's id at that path is not this module's debug file.
  module.build_id = std::string(id.size(), 'a');
  const fs::path other = dir.path / ".build-id" / "aa" / (module.build_id.substr(2) + ".debug");
  fs::create_directories(other.parent_path());
  fs::copy_file(kWithDwarf, other);
  CHECK(find_debug_file(module, {{dir.path.string()}}).empty());
}

TEST_CASE("the advice names the build-id path, the option and debuginfod") {
  NoDebuginfod quiet;
  const ModuleInfo module{0, 0, 0, "/usr/lib/libx.so", "abcdef0123"};
  const std::string advice = debug_file_advice(module, {{"/opt/debug"}});
  CHECK(advice.find("DIR/.build-id/ab/cdef0123.debug") != std::string::npos);
  CHECK(advice.find("none under /opt/debug, /usr/lib/debug") != std::string::npos);
  CHECK(advice.find("--debug-file-directory") != std::string::npos);
  CHECK(advice.find("set DEBUGINFOD_URLS") != std::string::npos);
  setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
  CHECK(debug_file_advice(module, {}).find("DEBUGINFOD_URLS (http://127.0.0.1:1)") != std::string::npos);
  const ModuleInfo gone_no_id{0, 0, 0, "/nonexistent/liby.so", ""};
  CHECK(debug_file_advice(gone_no_id, {}).find("report the run where it ran") != std::string::npos);
  const ModuleInfo here_no_id{0, 0, 0, kWithDwarf, ""};
  CHECK(debug_file_advice(here_no_id, {}).find("rebuild it with -g") != std::string::npos);
}
#endif  // CUAUDIT_DEBUG_TYPES_FIXTURE
