#include "cache_file.h"

#include <sys/stat.h>

#include <fmt/format.h>

#include "safe_file.h"

namespace cuaudit {

bool read_cache_document(const std::string& path, const char* schema, const char* what,
                         std::optional<nlohmann::json>& doc, std::string& error) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return true;  // no cache yet
  std::string text;
  if (!read_regular_file(path, size_t{1} << 30, text, error, Links::Refuse)) return false;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    error = unreadable_cache(path, what, e);
    return false;
  }
  // `value` throws when the key holds another type ("schema": null, found by fuzz_run_dir).
  const auto named = doc->is_object() ? doc->find("schema") : doc->end();
  if (!doc->is_object() || named == doc->end() || !named->is_string() || *named != schema) {
    error = fmt::format("{} is not a cuaudit {} (schema {})", path, what, schema);
    doc.reset();
    return false;
  }
  return true;
}

std::string unreadable_cache(const std::string& path, const char* what, const std::exception& e) {
  return fmt::format("cannot read the {} {}: {}", what, path, e.what());
}

}  // namespace cuaudit
