#include "collapsed_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "profile_stacks.h"
#include "text_helpers.h"

namespace cuaudit::report {
namespace {

// Collapsed stacks separate frames with ';' and the count with the last ' ': neither may appear
// inside a frame, and a C++ signature has both ("f(int, char)").
std::string frame_name(const Frame& f) {
  // A Python frame as PyTorch's memory flame graphs name it: file:line:function.
  const std::string raw =
      valid_utf8(is_python_frame(f)    ? fmt::format("{}:{}:{}", basename_of(f.file), f.line, f.function)
                 : !f.function.empty() ? f.function
                 : f.module.empty()    ? std::string("??")
                                       : f.module);
  // Flame-graph tools read lines of text: no control character of any kind survives.
  std::string name;
  for (size_t i = 0; i < raw.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(raw, i, cp);
    if (cp == ';') {
      name += ':';
    } else if (cp == ' ' || is_terminal_control(cp)) {
      name += '_';
    } else {
      name.append(raw, i, len);
    }
    i += len;
  }
  return name;
}

// Outermost first, as flame graphs read: the user's Python lines (in a Python program), then the
// native code that allocated, the API last (profile_stacks.h says which frames are shown).
std::string collapsed_line(const std::string& root, const std::string& api, const std::vector<Frame>& stack,
                           uint64_t bytes) {
  const std::vector<const Frame*> shown = profile_frames(stack);
  std::string line = root;
  for (auto it = shown.rbegin(); it != shown.rend(); ++it) line += ";" + frame_name(**it);
  line += ";" + api;
  return fmt::format("{} {}\n", line, bytes);
}

// A leak's or a growth's whole stack, innermost first: the allocation's native frames, then its
// Python frames. A growth finding's own stack is the user's Python lines, its native frames are
// the allocation's related stack; a leak's own stack is native, its Python stack a related one.
std::vector<Frame> finding_stack(const Finding& f) {
  const bool own_python = !f.stack.empty() && std::all_of(f.stack.begin(), f.stack.end(), is_python_frame);
  std::vector<Frame> native = own_python ? std::vector<Frame>() : f.stack;
  std::vector<Frame> python = own_python ? f.stack : std::vector<Frame>();
  for (const RelatedStack& r : f.related) {
    if (r.role == RelatedRole::Allocation && own_python && native.empty()) native = r.stack;
    if (r.role == RelatedRole::Python && !own_python && python.empty()) python = r.stack;
  }
  native.insert(native.end(), python.begin(), python.end());
  return native;
}

}  // namespace

std::string render_collapsed(const Report& report) {
  std::string out;
  for (const Finding& f : report.findings) {
    if (f.suppressed || f.bytes == 0) continue;
    if (f.kind == FindingKind::Leak) out += collapsed_line("leaked", f.api, finding_stack(f), f.bytes);
    if (f.kind == FindingKind::Growth) out += collapsed_line("growing", f.api, finding_stack(f), f.bytes);
  }
  for (const DevicePeak& peak : report.timeline.peaks) {
    for (const PeakSite& site : peak.sites) {
      // A pool's cache has no stack of its own: it is named by what it is.
      std::vector<Frame> stack = site.stack;
      if (stack.empty() && !site.site.empty()) stack.push_back(Frame{0, site.site});
      out += collapsed_line(fmt::format("peak_of_device_{}", peak.device), site.api, stack, site.bytes);
    }
  }
  return out;
}

}  // namespace cuaudit::report
