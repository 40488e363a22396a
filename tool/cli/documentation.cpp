#include "documentation.h"

#include <filesystem>
#include <regex>
#include <system_error>

namespace cuaudit {

namespace {

std::string find_documentation_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "doc" / "cuaudit" / "docs";
    if (fs::is_regular_file(installed / "EXIT_CODES.md", ec)) return installed.string();
  }
#ifdef CUAUDIT_SOURCE_DOCS
  if (fs::is_regular_file(fs::path(CUAUDIT_SOURCE_DOCS) / "EXIT_CODES.md", ec)) return CUAUDIT_SOURCE_DOCS;
#endif
  return {};
}

}  // namespace

// Looked up once: every command line builds its help texts, and each names the documentation.
std::string documentation_dir() {
  static const std::string dir = find_documentation_dir();
  return dir;
}

std::string with_documentation_paths(const std::string& text) {
  static const std::regex doc(R"(docs/([A-Z_]+\.md))");
  const std::string dir = documentation_dir();
  return std::regex_replace(text, doc, dir.empty() ? std::string("$1 in cuaudit's documentation") : dir + "/$1");
}

}  // namespace cuaudit
