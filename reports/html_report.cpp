#include "html_report.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "function_names.h"
#include "json_report.h"

namespace cuaudit::report {
namespace {

// reports/html_page.html, compiled in (reports/CMakeLists.txt).
const char kHtmlPage[] =
#include "html_page.inc"
    ;
constexpr std::string_view kDataMarker = "__CUAUDIT_REPORT_DATA__";

constexpr int kContextLines = 3;
constexpr off_t kMaxSourceBytes = 16 << 20;

// Where `file` really is, when that is inside `root` (a resolved directory): a frame's file name
// comes from the run directory, which anyone may have written; only the user's sources are shown.
std::optional<std::string> source_file_under(const std::string& file, const std::string& root) {
  char resolved[PATH_MAX];
  if (root.empty() || !realpath(file.c_str(), resolved)) return std::nullopt;
  const std::string path = resolved;
  const std::string prefix = root.back() == '/' ? root : root + "/";
  if (path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return path;
}

// The lines around every frame's line, from the source files readable now under `source_root`:
// {file: {line: text}}.
nlohmann::json source_excerpts(const Report& report, const std::string& source_root) {
  std::map<std::string, std::set<int>> wanted;
  auto want = [&](const std::vector<Frame>& stack) {
    for (const Frame& f : stack) {
      if (f.file.empty() || f.line <= 0) continue;
      // 64-bit: a frame's line comes from the run directory and may be near INT_MAX.
      for (int64_t l = int64_t{f.line} - kContextLines; l <= int64_t{f.line} + kContextLines; ++l) {
        if (l > 0 && l <= INT_MAX) wanted[f.file].insert(static_cast<int>(l));
      }
    }
  };
  for (const Finding& f : report.findings) {
    want(f.stack);
    for (const auto& r : f.related) want(r.stack);
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [file, lines] : wanted) {
    // Only regular source files of a sensible size under the source root: a frame's file name may
    // name a device, a FIFO, /etc/passwd or anything else.
    const std::optional<std::string> path = source_file_under(file, source_root);
    struct stat st;
    if (!path || stat(path->c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxSourceBytes) continue;
    std::ifstream in(*path);
    if (!in) continue;
    nlohmann::json excerpt = nlohmann::json::object();
    std::string text;
    const int last = *lines.rbegin();
    for (int n = 1; n <= last && std::getline(in, text); ++n) {
      if (lines.count(n)) excerpt[std::to_string(n)] = text;
    }
    out[file] = std::move(excerpt);
  }
  return out;
}

// Every frame's function name and its short form (function_names.h), for the page's tables and
// legends: one parser of C++ names for the tool and the page alike.
void collect_short_names(const nlohmann::json& value, nlohmann::json& names) {
  if (value.is_object()) {
    const auto function = value.find("function");
    if (function != value.end() && function->is_string()) {
      const std::string& name = function->get_ref<const std::string&>();
      if (!names.contains(name)) names[name] = short_function_name(name);
    }
  }
  if (value.is_structured()) {
    for (const auto& item : value) collect_short_names(item, names);
  }
}

}  // namespace

std::string json_for_script_element(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_html(const Report& report, const std::string& source_root) {
  nlohmann::json data = report_to_json(report);
  data["sources"] = source_excerpts(report, source_root);
  nlohmann::json short_names = nlohmann::json::object();
  collect_short_names(data, short_names);
  data["short_names"] = std::move(short_names);
  // Invalid UTF-8 from the target (a path) is replaced rather than failing the report.
  const std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string_view page = kHtmlPage;
  const size_t at = page.find(kDataMarker);  // present: tests/unit/test_reports.cpp checks the page
  return std::string(page.substr(0, at)) + json_for_script_element(json) +
         std::string(page.substr(at + kDataMarker.size()));
}

}  // namespace cuaudit::report
