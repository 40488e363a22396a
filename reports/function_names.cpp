#include "function_names.h"

#include <vector>

#include <fmt/format.h>

#include "report_model.h"
#include "text_helpers.h"

namespace cuaudit::report {
namespace {

bool starts_at(std::string_view s, size_t i, std::string_view word) { return s.substr(i, word.size()) == word; }

// The text of `name` at depth 0 of its template brackets, with the spans of its top-level
// parenthesis groups. "<" and ">" inside "operator<", "operator<<", "operator->" ... and
// "(anonymous namespace)" / "<lambda()>" are names, not brackets.
struct Outline {
  std::string text;
  std::vector<std::pair<size_t, size_t>> groups;  // [open, close] in `text`
};

Outline outline(std::string_view name) {
  Outline out;
  int angle = 0, paren = 0;
  size_t open = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (starts_at(name, i, "operator")) {  // its symbol is part of the name, brackets and all
      size_t j = i + 8;
      while (j < name.size() && name[j] == ' ') ++j;
      size_t end = j;
      if (starts_at(name, j, "()") || starts_at(name, j, "[]")) {
        end = j + 2;
      } else {
        while (end < name.size() && std::string_view("<>=!+-*/%^&|~,").find(name[end]) != std::string_view::npos) ++end;
      }
      if (!angle) out.text.append(name.substr(i, end - i));
      i = end - 1;
      continue;
    }
    if (starts_at(name, i, "(anonymous namespace)") || starts_at(name, i, "{lambda(")) {
      const size_t end = name.find(c == '(' ? ')' : '}', i);
      if (end == std::string_view::npos) break;
      if (!angle) out.text.append(name.substr(i, end + 1 - i));
      i = end;
      continue;
    }
    if (c == '<') {
      ++angle;
      continue;
    }
    if (c == '>' && angle) {
      --angle;
      continue;
    }
    if (angle) continue;
    if (c == '(') {
      if (!paren++) open = out.text.size();
    } else if (c == ')' && paren && !--paren) {
      out.groups.emplace_back(open, out.text.size());
    }
    out.text += c;
  }
  return out;
}

}  // namespace

std::string short_function_name(std::string_view demangled) {
  if (demangled.empty() || demangled.front() == '<') return std::string(demangled);  // "<module>", "<lambda>"
  Outline o = outline(demangled);
  // The parameters are the last top-level group; what follows it (const, &, noexcept) goes with it.
  std::string name = o.groups.empty() ? o.text : o.text.substr(0, o.groups.back().first);
  // A return type in front ("void ", "std::string ") is a word before a top-level space.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '(') ++depth;
    if (name[i] == ')') --depth;
    if (name[i] == ' ' && depth == 0 && !starts_at(name, i + 1, "namespace)") && i + 1 < name.size() &&
        !(i >= 8 && starts_at(name, i - 8, "operator")))
      start = i + 1;
  }
  name = name.substr(start);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  return name.empty() ? std::string(demangled) : name;
}

std::string stack_site_name(const std::vector<Frame>& stack) {
  for (const Frame& f : stack) {
    if (f.file.empty()) continue;
    const std::string where = fmt::format("{}:{}", basename_of(f.file), f.line);
    return f.function.empty() ? where : short_function_name(f.function) + " " + where;
  }
  for (const Frame& f : stack) {
    if (f.function.empty()) continue;
    const std::string name = short_function_name(f.function);
    return f.module.empty() ? name : fmt::format("{} ({})", name, basename_of(f.module));
  }
  if (!stack.empty() && !stack.front().module.empty())
    return fmt::format("{}+0x{:x}", basename_of(stack.front().module), stack.front().module_offset);
  return "?";
}

}  // namespace cuaudit::report
