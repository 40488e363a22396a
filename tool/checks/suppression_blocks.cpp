#include "suppression_blocks.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "function_names.h"
#include "suppressions.h"
#include "text_helpers.h"

namespace cuaudit {
namespace {

bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// A path pattern matches the whole path or, written without a `/`, its base name: `src:app.cpp`
// is the file the report shows as /work/app.cpp.
bool path_matches(const std::string& pattern, const std::string& path) {
  if (path.empty()) return false;
  return matches_whole_name(pattern, path) ||
         (pattern.find('/') == std::string::npos && matches_whole_name(pattern, report::basename_of(path)));
}

bool line_matches(const FrameLine& l, const report::Frame& f) {
  switch (l.kind) {
    case FrameLine::Kind::Function:
      // The name as the report shows it, its linkage name, or its short form (no return type,
      // template arguments or parameters): debug information names `process_batch` what the
      // symbol table calls `process_batch(float const*, int, int)`.
      return (!f.function.empty() && (matches_whole_name(l.pattern, f.function) ||
                                      matches_whole_name(l.pattern, report::short_function_name(f.function)))) ||
             (!f.mangled.empty() && matches_whole_name(l.pattern, f.mangled));
    case FrameLine::Kind::Source:
      return path_matches(l.pattern, f.file) && (l.line == 0 || l.line == f.line);
    case FrameLine::Kind::Object:
      return path_matches(l.pattern, f.module);
    case FrameLine::Kind::AnyFrames:
      return true;
  }
  return false;
}

FrameLine frame_line(const std::string& text, const std::string& origin, int number) {
  FrameLine l;
  if (text == "...") return l;
  const auto refuse = [&](std::string_view why) {
    return std::runtime_error(fmt::format("{}:{}: `{}` {}", origin, number, text, why));
  };
  if (starts_with(text, "fun:")) {
    l.kind = FrameLine::Kind::Function;
  } else if (starts_with(text, "obj:")) {
    l.kind = FrameLine::Kind::Object;
  } else if (starts_with(text, "src:")) {
    l.kind = FrameLine::Kind::Source;
  } else {
    throw refuse("is not a frame line; write fun:FUNCTION, src:FILE[:LINE], obj:MODULE or ...");
  }
  l.pattern = text.substr(4);
  const auto colon = l.pattern.rfind(':');
  if (l.kind == FrameLine::Kind::Source && colon != std::string::npos && colon + 1 < l.pattern.size() &&
      l.pattern.find_first_not_of("0123456789", colon + 1) == std::string::npos && colon + 10 > l.pattern.size()) {
    l.line = std::stoi(l.pattern.substr(colon + 1));
    l.pattern.resize(colon);
  }
  if (l.pattern.empty()) throw refuse("names nothing");
  return l;
}

}  // namespace

std::string FrameLine::text() const {
  switch (kind) {
    case Kind::Function:
      return "fun:" + pattern;
    case Kind::Source:
      return line ? fmt::format("src:{}:{}", pattern, line) : "src:" + pattern;
    case Kind::Object:
      return "obj:" + pattern;
    case Kind::AnyFrames:
      break;
  }
  return "...";
}

SuppressionBlock parse_suppression_block(const std::vector<std::pair<int, std::string>>& lines,
                                         const std::string& origin, int open_line) {
  SuppressionBlock block;
  if (lines.size() < 3) {
    throw std::runtime_error(fmt::format(
        "{}:{}: a `{{` block holds a name, a finding kind and at least one frame line (fun:, src:, obj:, ...), "
        "one a line, then `}}`",
        origin, open_line));
  }
  block.name = lines[0].second;
  block.kind = starts_with(lines[1].second, "cuaudit:") ? lines[1].second.substr(8) : lines[1].second;
  block.kind_line = lines[1].first;
  for (size_t i = 2; i < lines.size(); ++i) {
    const auto& [number, text] = lines[i];
    if (starts_with(text, "max-hits:")) {
      std::string value = text.substr(9);
      value.erase(0, value.find_first_not_of(" \t"));
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos ||
          std::stoull(value) == 0) {
        throw std::runtime_error(
            fmt::format("{}:{}: `{}`: max-hits takes a number of findings, 1 or more", origin, number, text));
      }
      block.max_hits = std::stoull(value);
      continue;
    }
    block.frames.push_back(frame_line(text, origin, number));
  }
  if (block.frames.empty()) {
    throw std::runtime_error(fmt::format("{}:{}: the block `{}` has no frame line (fun:, src:, obj: or ...)", origin,
                                         open_line, block.name));
  }
  return block;
}

bool frames_match_sequence(const std::vector<FrameLine>& lines, const std::vector<report::Frame>& stack) {
  // matched[j]: the lines so far can end just above frame j. `...` spreads it over every frame below.
  std::vector<char> matched(stack.size() + 1, 0), next(stack.size() + 1, 0);
  matched[0] = 1;
  for (const FrameLine& l : lines) {
    std::fill(next.begin(), next.end(), 0);
    for (size_t j = 0; j <= stack.size(); ++j) {
      if (!matched[j]) continue;
      if (l.kind == FrameLine::Kind::AnyFrames) {
        std::fill(next.begin() + static_cast<std::ptrdiff_t>(j), next.end(), 1);
        break;
      }
      if (j < stack.size() && line_matches(l, stack[j])) next[j + 1] = 1;
    }
    matched.swap(next);
  }
  return std::find(matched.begin(), matched.end(), 1) != matched.end();
}

}  // namespace cuaudit
