// Suppressions in valgrind's block form, for what one `KIND:PATTERN` line cannot say: a sequence
// of frames from the top of the stack, and a limit on how many findings a rule may hide.
//
//   {
//      vendor-init-leak        the rule's name, shown in the "Suppressions used" table
//      leak                    a finding kind, or * (cuaudit:leak, as valgrind writes Memcheck:Leak)
//      max-hits: 1             optional: hide at most this many findings, report the rest
//      fun:vendor_init         frame #0's function
//      ...                     any number of frames (none included)
//      src:app.cpp:42          a frame's source file (its path or base name), and line
//      obj:*/libvendor.so*     a frame's module
//   }
//
// The frame lines match the stack from frame #0 down, one frame each, as valgrind's do; frames
// below the last line are free. Patterns match the whole name with `*` (any run) and `?` (any one
// character), and the escapes of KIND:PATTERN rules.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "report_model.h"

namespace cuaudit {

struct FrameLine {
  enum class Kind { Function, Source, Object, AnyFrames };
  Kind kind = Kind::AnyFrames;
  std::string pattern;
  int line = 0;  // src:FILE:LINE; 0: any line

  std::string text() const;  // as written: "fun:main", "src:app.cpp:42", "..."
};

struct SuppressionBlock {
  std::string name;
  std::string kind;       // the kind line as written, `cuaudit:` taken off
  int kind_line = 0;      // its line in the file
  uint64_t max_hits = 0;  // 0: no limit
  std::vector<FrameLine> frames;
};

// A block's lines between `{` and `}` (each with its line number, comments and blanks taken out),
// read as valgrind reads them; throws std::runtime_error naming `origin` and the line at fault.
SuppressionBlock parse_suppression_block(const std::vector<std::pair<int, std::string>>& lines,
                                         const std::string& origin, int open_line);

// Do the frame lines match `stack` from frame #0?
bool frames_match_sequence(const std::vector<FrameLine>& lines, const std::vector<report::Frame>& stack);

}  // namespace cuaudit
