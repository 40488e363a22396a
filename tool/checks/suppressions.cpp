#include "suppressions.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "text_helpers.h"

namespace cuaudit {
namespace {

// A pattern's bytes, `\` escapes read: a literal byte, or kAnyRun for an unescaped `*` (kAnyOne
// for `?`, in a block's frame lines).
constexpr int kAnyRun = -1;
constexpr int kAnyOne = -2;

// The escapes the text report writes for what a terminal must not see (report::visible): `\xHH` a
// byte, `\u{HHHH}` a code point (its UTF-8 bytes), `\n` a newline; so that a name the report
// shows escaped, pasted into a rule, matches the name. Where `at` starts one, its bytes and
// length; else nothing.
std::optional<std::pair<std::string, size_t>> text_report_escape(std::string_view pattern, size_t at) {
  const std::string_view rest = pattern.substr(at);
  const auto hex = [](std::string_view digits, uint32_t& value) {
    value = 0;
    for (const char c : digits) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
      value = value * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return !digits.empty() && digits.size() <= 6;
  };
  uint32_t value = 0;
  if (rest.size() >= 2 && rest[1] == 'n') return std::pair{std::string(1, '\n'), size_t{2}};
  if (rest.size() >= 4 && rest[1] == 'x' && hex(rest.substr(2, 2), value))
    return std::pair{std::string(1, static_cast<char>(value)), size_t{4}};
  const size_t close = rest.find('}');
  if (rest.size() >= 5 && rest.substr(1, 2) == "u{" && close != std::string_view::npos &&
      hex(rest.substr(3, close - 3), value) && value <= 0x10ffff) {
    return std::pair{report::utf8_of(value), close + 1};
  }
  return std::nullopt;
}

std::vector<int> pattern_units(std::string_view pattern, bool any_one = false) {
  std::vector<int> units;
  units.reserve(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      if (const auto escape = text_report_escape(pattern, i)) {
        for (const char c : escape->first) units.push_back(static_cast<unsigned char>(c));
        i += escape->second - 1;
        continue;
      }
      units.push_back(static_cast<unsigned char>(pattern[++i]));
    } else {
      units.push_back(pattern[i] == '*'              ? kAnyRun
                      : pattern[i] == '?' && any_one ? kAnyOne
                                                     : static_cast<unsigned char>(pattern[i]));
    }
  }
  return units;
}

// Does `pattern` (wildcards, no anchors) match all of `text`?
bool glob_matches(const std::vector<int>& pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == kAnyRun) {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && (pattern[p] == static_cast<unsigned char>(text[t]) || pattern[p] == kAnyOne)) {
      ++p, ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == kAnyRun) ++p;
  return p == pattern.size();
}

// Is text[i] escaped (an odd number of backslashes before it)?
bool escaped(std::string_view text, size_t i) {
  size_t backslashes = 0;
  while (i > backslashes && text[i - backslashes - 1] == '\\') ++backslashes;
  return backslashes % 2 == 1;
}

// The line without its comment: from the first `#` that is not escaped.
std::string_view without_comment(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && !escaped(line, i)) return line.substr(0, i);
  }
  return line;
}

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return std::string(s.substr(first, last - first + 1));
}

bool rule_matches(const SuppressionRule& rule, report::FindingKind kind, const std::vector<report::Frame>& stack,
                  const std::vector<report::RelatedStack>& related) {
  const bool kind_fits = rule.keep ? report::finding_kind_info(kind).suppressible
                         : rule.holds_by_allocator()
                             ? kind == report::FindingKind::Leak || kind == report::FindingKind::ResourceLeak
                         : rule.kind ? *rule.kind == kind
                                     : report::finding_kind_info(kind).suppressible;
  if (!kind_fits) return false;
  auto frames_match = [&](const std::vector<report::Frame>& stack) {
    if (!rule.frames.empty()) return frames_match_sequence(rule.frames, stack);
    return std::any_of(stack.begin(), stack.end(), [&](const report::Frame& fr) {
      return matches_suppression_pattern(rule.pattern, fr.function) ||
             matches_suppression_pattern(rule.pattern, fr.file) || matches_suppression_pattern(rule.pattern, fr.module);
    });
  };
  if (frames_match(stack)) return true;
  return std::any_of(related.begin(), related.end(),
                     [&](const report::RelatedStack& r) { return frames_match(r.stack); });
}

const char kBuiltinRules[] =
#include "builtin_allocators.inc"
    ;

}  // namespace

const char* builtin_allocator_rules() { return kBuiltinRules; }

std::string SuppressionRule::text() const {
  if (keep) return "keep:" + pattern;
  const char* key = kind ? report::finding_kind_key(*kind) : "*";
  if (!frames.empty()) return fmt::format("{}:{{{}}}", key, name);
  return allocator.empty() ? fmt::format("{}:{}", key, pattern) : fmt::format("{}:{}:{}", key, allocator, pattern);
}

std::string SuppressionRule::table_text() const {
  if (!max_hits) return text();
  return past_limit ? fmt::format("{} (max-hits {}, {} more reported)", text(), max_hits, past_limit)
                    : fmt::format("{} (max-hits {})", text(), max_hits);
}

bool matches_suppression_pattern(std::string_view pattern, std::string_view text) {
  if (pattern.empty() || text.empty()) return false;
  const bool anchored_start = pattern.front() == '^';
  const bool anchored_end = pattern.size() > 1 && pattern.back() == '$' && !escaped(pattern, pattern.size() - 1);
  std::vector<int> glob = pattern_units(
      pattern.substr(anchored_start ? 1 : 0, pattern.size() - (anchored_start ? 1 : 0) - (anchored_end ? 1 : 0)));
  if (!anchored_start) glob.insert(glob.begin(), kAnyRun);
  if (!anchored_end) glob.push_back(kAnyRun);
  return glob_matches(glob, text);
}

bool matches_whole_name(std::string_view pattern, std::string_view text) {
  return !pattern.empty() && glob_matches(pattern_units(pattern, true), text);
}

void Suppressions::load_file(const std::string& path) {
  struct stat st;
  const bool exists = stat(path.c_str(), &st) == 0;
  if (!exists || !S_ISREG(st.st_mode)) {  // a directory would read as an empty file
    throw std::runtime_error(
        fmt::format("cannot read suppression file {}: {}", path, exists ? "not a regular file" : strerror(errno)));
  }
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read suppression file {}", path));
  std::stringstream text;
  text << in.rdbuf();
  load_text(text.str(), path);
}

namespace {

// The kind a suppression names: `*` (nullopt) or a kind that can be suppressed; else refused.
std::optional<report::FindingKind> suppressed_kind(const std::string& kind, const std::string& where,
                                                   const std::string& rule) {
  const auto known = report::finding_kind_from_key(kind);
  if (kind == "*" || (known && report::finding_kind_info(*known).suppressible)) return known;
  std::string kinds;
  for (const auto& k : report::kFindingKinds) {
    if (k.suppressible) kinds += std::string(k.key) + ", ";
  }
  throw std::runtime_error(
      fmt::format("{}: `{}` is not a suppression; write KIND:PATTERN with KIND one of "
                  "{}or *, held_by_allocator:NAME:PATTERN, keep:PATTERN, or a {{ }} block",
                  where, rule, kinds));
}

// The lines of the block that opens at `open_line` (comments and blanks out), up to its `}`.
std::vector<std::pair<int, std::string>> block_lines(std::istringstream& in, int& number, const std::string& origin,
                                                     int open_line) {
  std::vector<std::pair<int, std::string>> lines;
  std::string line;
  while (std::getline(in, line)) {
    ++number;
    std::string text = trim(without_comment(line));
    if (text == "}") return lines;
    if (!text.empty()) lines.emplace_back(number, std::move(text));
  }
  throw std::runtime_error(fmt::format("{}:{}: the block opened here has no closing `}}`", origin, open_line));
}

// An XML file where rules were expected: compute-sanitizer's saved records, most likely.
bool looks_like_xml(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return false;
  return text.compare(first, 5, "<?xml") == 0 || text.compare(first, 23, "<ComputeSanitizerOutput") == 0;
}

}  // namespace

void Suppressions::load_text(const std::string& text, const std::string& origin, bool builtin) {
  if (looks_like_xml(text)) {
    throw std::runtime_error(
        fmt::format("{} is XML, not a suppression file: compute-sanitizer's records (--xml --save) become rules with "
                    "`cuaudit suppressions import {} > FILE.supp`; then give --suppressions FILE.supp",
                    origin, origin));
  }
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string rule = trim(without_comment(line));
    if (rule.empty()) continue;
    const std::string where = fmt::format("{}:{}", origin, number);
    if (rule == "{") {  // valgrind's block: a name, a kind, frame lines
      const int open_line = number;
      SuppressionBlock block = parse_suppression_block(block_lines(in, number, origin, open_line), origin, open_line);
      SuppressionRule r{suppressed_kind(block.kind, fmt::format("{}:{}", origin, block.kind_line), block.kind), "", "",
                        origin, open_line};
      r.name = std::move(block.name);
      r.frames = std::move(block.frames);
      r.max_hits = block.max_hits;
      r.builtin = builtin;
      add(std::move(r));
      continue;
    }
    const auto colon = rule.find(':');
    const std::string kind = colon == std::string::npos ? std::string() : trim(rule.substr(0, colon));
    std::string pattern = colon == std::string::npos ? std::string() : trim(rule.substr(colon + 1));
    std::string allocator;
    auto known = report::finding_kind_from_key(kind);
    if (kind == "keep") {  // keep:PATTERN, an allow-list rule
      if (pattern.empty())
        throw std::runtime_error(fmt::format("{}: `{}` keeps nothing; write keep:PATTERN", where, rule));
      SuppressionRule r{std::nullopt, pattern, "", origin, number};
      r.keep = true;
      add(std::move(r));
      continue;
    }
    if (known == report::FindingKind::HeldByAllocator) {  // held_by_allocator:NAME:PATTERN
      const auto second = pattern.find(':');
      allocator = second == std::string::npos ? std::string() : trim(pattern.substr(0, second));
      pattern = second == std::string::npos ? std::string() : trim(pattern.substr(second + 1));
      if (allocator.empty() || pattern.empty()) {
        throw std::runtime_error(
            fmt::format("{}: `{}` is not a rule; write held_by_allocator:NAME:PATTERN", where, rule));
      }
    } else {
      known = suppressed_kind(colon == std::string::npos || pattern.empty() ? std::string() : kind, where, rule);
    }
    SuppressionRule r{known, pattern, allocator, origin, number};
    r.builtin = builtin;
    add(std::move(r));
  }
}

void Suppressions::add(SuppressionRule rule) { rules_.push_back(std::move(rule)); }

bool Suppressions::has_keep_rules() const {
  return std::any_of(rules_.begin(), rules_.end(), [](const SuppressionRule& r) { return r.keep; });
}

void Suppressions::apply(std::vector<report::Finding>& findings) {
  const bool allow_list = has_keep_rules();
  for (report::Finding& f : findings) {
    if (f.suppressed) continue;
    for (SuppressionRule& rule : rules_) {
      if (rule.holds_by_allocator() || rule.keep || !rule_matches(rule, f.kind, f.stack, f.related)) continue;
      if (rule.max_hits && rule.hits >= rule.max_hits) {  // past its limit: reported, and said in the table
        ++rule.past_limit;
        continue;
      }
      ++rule.hits;
      rule.bytes += f.bytes;
      f.suppressed = true;
      break;
    }
    if (f.suppressed || !allow_list || !report::finding_kind_info(f.kind).suppressible) continue;
    auto keeper = std::find_if(rules_.begin(), rules_.end(), [&](const SuppressionRule& r) {
      return r.keep && rule_matches(r, f.kind, f.stack, f.related);
    });
    if (keeper != rules_.end()) {
      ++keeper->hits;
      keeper->bytes += f.bytes;
    } else {
      f.suppressed = true;
      ++kept_out_;
      kept_out_bytes_ += f.bytes;
    }
  }
}

std::optional<std::string> Suppressions::holder_of(report::FindingKind kind, const std::vector<report::Frame>& stack,
                                                   const std::vector<report::RelatedStack>& related, uint64_t bytes) {
  for (SuppressionRule& rule : rules_) {
    // A keep rule says what to report, not who holds memory: it neither makes nor hides a holder.
    if (rule.keep || !rule_matches(rule, kind, stack, related)) continue;
    if (!rule.holds_by_allocator()) return std::nullopt;
    ++rule.hits;
    rule.bytes += bytes;
    return rule.allocator;
  }
  return std::nullopt;
}

std::optional<std::string> Suppressions::allocator_of(const std::vector<report::Frame>& stack) const {
  for (const SuppressionRule& rule : rules_) {
    if (rule.holds_by_allocator() && rule_matches(rule, report::FindingKind::Leak, stack, {})) return rule.allocator;
  }
  return std::nullopt;
}

std::string escape_suppression_pattern(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const std::string whole(text);
  for (size_t i = 0; i < whole.size();) {
    uint32_t cp = 0;
    const size_t len = report::utf8_sequence(whole, i, cp);
    const char c = whole[i];
    if (!len || cp == '\n' || report::is_terminal_control(cp)) {  // as the text report shows it
      out += report::visible(whole.substr(i, len ? len : 1));
    } else {
      if (c == '\\' || c == '*' || c == '#') out += '\\';
      out.append(whole, i, len);
    }
    i += len ? len : 1;
  }
  if (!out.empty() && out.back() == '$') out.insert(out.size() - 1, 1, '\\');  // not an anchor
  if (!out.empty() && out.front() == '^') out.insert(out.begin(), '\\');
  return out;
}

std::string suggest_suppression(const report::Finding& f) {
  // The names go in escaped: `operator*` must not become a wildcard, nor `#` a comment.
  for (const report::Frame& frame : f.stack) {
    if (!frame.function.empty())
      return fmt::format("{}:^{}$", report::finding_kind_key(f.kind), escape_suppression_pattern(frame.function));
    if (!frame.file.empty())
      return fmt::format("{}:{}", report::finding_kind_key(f.kind), escape_suppression_pattern(frame.file));
  }
  return fmt::format("{}:{}", report::finding_kind_key(f.kind), f.api);
}

}  // namespace cuaudit
