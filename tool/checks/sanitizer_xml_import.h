// compute-sanitizer's saved records (`--xml yes --save FILE`, the files projects keep for its
// `--suppressions`) as cuaudit suppressions: `cuaudit suppressions import FILE.xml`.
//
// A record names a kind of error (a leak, a CUDA API error, a device-side access) and the host
// stack of the call that made it, from the driver's frames down to main. A leak or an API error is
// what cuaudit reports too (leak; a failing call, which cuaudit calls unchecked_error, api_error,
// invalid_free or out_of_memory by what the program did with it: `*`; a kernel's misaligned access:
// misaligned_param at its launch): each becomes a `{ }` block whose frame lines are the record's
// frames from the first one outside CUDA's own libraries down to main, as cuaudit's stacks
// begin and end. A device-side error (an out-of-bounds access in a kernel, a race) has no
// cuaudit counterpart: it is listed as a comment, so nothing of the file is dropped without a
// word.
#pragma once

#include <string>
#include <vector>

namespace cuaudit {

struct SanitizerFrame {
  std::string function;
  std::string module;
  std::string file;
  int line = 0;
};

struct SanitizerRecord {
  std::string kind;   // <kind>: "Leak", "Api", "Precise", ...
  std::string level;  // <level>: "Error", "Warning"
  std::string what;   // <what><text>
  std::vector<SanitizerFrame> host_stack;
};

// The records of a compute-sanitizer XML document; throws std::runtime_error with the parser's
// message and line when `xml` is not well-formed or is not compute-sanitizer's.
std::vector<SanitizerRecord> read_sanitizer_xml(const std::string& xml);

struct SanitizerImport {
  std::string rules;     // the suppression file's text
  int blocks = 0;        // rules written
  int without_rule = 0;  // records with no cuaudit counterpart (listed as comments)
};

// The suppression file for `records` read from `origin` (named in the rules and comments).
SanitizerImport suppressions_from_sanitizer(const std::vector<SanitizerRecord>& records, const std::string& origin);

}  // namespace cuaudit
