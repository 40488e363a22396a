// Suppressions in the format LeakSanitizer and heaptrack users know: one `kind:pattern` per line,
// `#` comments. The pattern is matched against the function names, source files and modules of a
// finding's stacks: `*` matches any run of characters, a leading `^` and a trailing `$` anchor it,
// and otherwise it may match anywhere (leak:CUDACachingAllocator).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "report_model.h"

namespace cuaudit {

// LeakSanitizer's rules: `*` wildcard, `^` and `$` anchors, substring match otherwise.
bool matches_suppression_pattern(std::string_view pattern, std::string_view text);

struct SuppressionRule {
  std::string kind;     // a finding kind, or "*"
  std::string pattern;
  std::string file;     // where it was read
  int line = 0;
  uint64_t hits = 0;    // findings it suppressed in this run
  uint64_t bytes = 0;   // their bytes
};

class Suppressions {
 public:
  // Reads suppression files; throws std::runtime_error naming the file and line of a bad rule.
  void load_file(const std::string& path);
  void add(SuppressionRule rule);

  // Marks each finding that a rule matches as suppressed (the first matching rule counts it).
  void apply(std::vector<report::Finding>& findings);

  const std::vector<SuppressionRule>& rules() const { return rules_; }

 private:
  std::vector<SuppressionRule> rules_;
};

// A rule that would suppress `finding`: its kind and the first user frame's function, or file.
std::string suggest_suppression(const report::Finding& finding);

// The finding kinds a rule may name (besides "*").
const std::vector<std::string>& suppressible_kinds();

}  // namespace cuaudit
