// Suppressions in the format LeakSanitizer and heaptrack users know: one `kind:pattern` per line,
// `#` comments. The pattern is matched against the function names, source files and modules of a
// finding's stacks: `*` matches any run of characters, a leading `^` and a trailing `$` anchor it,
// and otherwise it may match anywhere (leak:CUDACachingAllocator).
//
// `held_by_allocator:NAME:PATTERN` does not hide a leak but says what it is: memory a framework's
// allocator (NAME) holds on purpose until the process ends, reported as `held_by_allocator`
// (info, never gating). cuaudit ships such rules for the common frameworks (builtin_allocators.supp).
//
// `keep:PATTERN` (or `--keep-only PATTERN`) turns the list around, as an allow-list: once there is
// one, a finding whose stacks match no keep rule is suppressed ("report only what goes through my
// code"), whatever its kind, as long as that kind can be suppressed at all.
//
// A `{ ... }` block (valgrind's form, suppression_blocks.h) names frames from the top of the stack
// in order, and may limit how many findings it hides (max-hits).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "report_model.h"
#include "suppression_blocks.h"

namespace cuaudit {

// LeakSanitizer's rules: `*` wildcard, `^` and `$` anchors, substring match otherwise.
bool matches_suppression_pattern(std::string_view pattern, std::string_view text);
// valgrind's frame lines: the whole of `text`, `*` any run and `?` any one byte (the same escapes).
bool matches_whole_name(std::string_view pattern, std::string_view text);

struct SuppressionRule {
  // KIND:PATTERN suppresses findings of that kind (nullopt: `*`, every suppressible kind);
  // held_by_allocator:NAME:PATTERN (kind HeldByAllocator) turns leaks into held_by_allocator.
  std::optional<report::FindingKind> kind;
  std::string pattern;
  std::string allocator;  // held_by_allocator rules: the allocator's name
  std::string file;       // where it was read
  int line = 0;
  uint64_t hits = 0;     // findings it suppressed in this run
  uint64_t bytes = 0;    // their bytes
  bool builtin = false;  // one of cuaudit's own rules
  bool keep = false;     // keep:PATTERN: hits are the findings it kept
  // A `{ ... }` block: its name and frame lines (matched from frame #0 instead of `pattern`
  // anywhere), and at most how many findings it hides (0: no limit); findings it matched past the
  // limit, reported.
  std::string name;
  std::vector<FrameLine> frames;
  uint64_t max_hits = 0;
  uint64_t past_limit = 0;

  bool holds_by_allocator() const { return kind == report::FindingKind::HeldByAllocator; }
  // As written: "leak:upload", "held_by_allocator:PyTorch:CUDACachingAllocator"; a block by its
  // kind and name, "leak:{vendor-init}".
  std::string text() const;
  // text() with the limit, for the "Suppressions used" table: "leak:{x} (max-hits 1, 2 more reported)".
  std::string table_text() const;
};

class Suppressions {
 public:
  // Reads suppression files; throws std::runtime_error naming the file and line of a bad rule.
  void load_file(const std::string& path);
  // Rules from text; `origin` names them in messages and in the report.
  void load_text(const std::string& text, const std::string& origin, bool builtin = false);
  void add(SuppressionRule rule);

  // The first suppression that matches a finding marks it suppressed (held_by_allocator rules
  // were asked when the findings were made: holder_of). Rules count hits.
  void apply(std::vector<report::Finding>& findings);

  // A leak or resource leak about to be made (its kind, stacks and bytes): the allocator of the
  // first rule that matches it, when that rule is a held_by_allocator one (counted as a hit);
  // nothing when no rule matches or a suppression comes first (it will be suppressed).
  std::optional<std::string> holder_of(report::FindingKind kind, const std::vector<report::Frame>& stack,
                                       const std::vector<report::RelatedStack>& related, uint64_t bytes);

  // The allocator of the first held_by_allocator rule that a leak with this stack would match,
  // whatever comes before it and counting no hit: who hands out a site's memory, to name the site
  // in charts (site_labels.h).
  std::optional<std::string> allocator_of(const std::vector<report::Frame>& stack) const;

  const std::vector<SuppressionRule>& rules() const { return rules_; }
  bool has_keep_rules() const;
  // What the keep rules left out in this run: findings and their bytes.
  uint64_t kept_out() const { return kept_out_; }
  uint64_t kept_out_bytes() const { return kept_out_bytes_; }

 private:
  std::vector<SuppressionRule> rules_;
  uint64_t kept_out_ = 0, kept_out_bytes_ = 0;
};

// A rule that would suppress `finding`: its kind and the first user frame's function, or file.
std::string suggest_suppression(const report::Finding& finding);

// `text` as a pattern that matches it literally: `\`, `*` and `#` escaped with `\` (and a leading
// `^` or trailing `$`, which would anchor).
std::string escape_suppression_pattern(std::string_view text);

// cuaudit's built-in held_by_allocator rules, as shipped (tool/checks/builtin_allocators.supp).
const char* builtin_allocator_rules();

}  // namespace cuaudit
