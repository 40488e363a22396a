#include "fingerprint.h"

#include <fmt/format.h>

#include "text_helpers.h"

namespace cuaudit::report {

std::string finding_fingerprint(const Finding& f) {
  std::string key = fmt::format("{}|{}|{}|", finding_kind_key(f.kind), f.api, f.result);
  // Launch findings: which kernel parameter (two bad arguments of one launch are two findings).
  if (f.parameter) key += fmt::format("{}#{}|", f.parameter->kernel, f.parameter->index);
  for (const Frame& frame : f.stack) {
    if (!frame.function.empty() || !frame.file.empty()) {
      key += frame.function + "@" + basename_of(frame.file) + ";";
    } else if (!frame.module.empty()) {
      // No name: the module and the offset in it, stable across runs (a pc is not: ASLR).
      key += fmt::format("{}+0x{:x};", basename_of(frame.module), frame.module_offset);
    } else {
      // In no module (JIT code, an anonymous executable mapping): the address moves from run to run,
      // its offset in its page does not (mappings are page-aligned), and it keeps two such sites apart.
      key += fmt::format("@?+0x{:03x};", frame.pc & 0xfff);
    }
  }
  return key;
}

uint64_t stable_hash(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64-bit
  for (const unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string describe_finding(const Finding& f) {
  std::string where = "(no stack)";
  if (!f.stack.empty()) {
    const Frame& top = f.stack.front();
    if (top.function.empty() && top.file.empty() && !top.module.empty()) {
      where = fmt::format("{}+0x{:x}", basename_of(top.module), top.module_offset);  // unsymbolized: its place
    } else {
      where = fmt::format("{} ({})", top.function.empty() ? "??" : top.function,
                          top.file.empty() ? "??" : basename_of(top.file));
    }
  }
  return fmt::format("{} {} at {}", finding_kind_key(f.kind), f.api, where);
}

}  // namespace cuaudit::report
