// Who holds memory at exit on purpose: asked by the leak check while it makes a leak or resource
// leak, so that the finding's kind is final when it is made (held_by_allocator, info, never
// gating) and no later stage rewrites it. Three sources of that knowledge, in this order:
// - the memory model (ownership.h): a framework's reserve, the segments its hooks described (or
//   that its blocks were handed out of), whatever the rules say: --builtin-suppressions no and a
//   keep rule leave it held;
// - a library handle a framework created (library_handles.h: PyTorch's cuBLAS handles, ...);
// - the held_by_allocator rules, cuaudit's built-in ones and the user's (suppressions.h), for
//   memory no hook describes (runs without hooks, RMM, NCCL, numba-cuda), matched as the report
//   will show the frames (--path-map), and against a library handle's frames from its create call
//   outwards, as the report shows the program's own handle.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ownership.h"
#include "path_map.h"
#include "report_model.h"
#include "suppressions.h"

namespace cuaudit {

struct Holder {
  std::string allocator;  // "PyTorch's CUDA caching allocator", "cuBLAS handle workspace"
  std::string note;       // why, when there is more to say ("" otherwise)
};

class Holders {
 public:
  // `rules` count their hits here; both must outlive this.
  Holders(Suppressions& rules, const std::vector<PathMapping>& paths) : rules_(rules), paths_(paths) {}

  // The holder of a leak (kind Leak or ResourceLeak) of memory owned by `owner`, with these stacks
  // and bytes, if any.
  std::optional<Holder> held(report::FindingKind kind, const Owner& owner, const std::vector<report::Frame>& stack,
                             const std::vector<report::RelatedStack>& related, uint64_t bytes);

 private:
  Suppressions& rules_;
  const std::vector<PathMapping>& paths_;
};

// The kind, severity, headline and message of memory (or handles, `resource`) that `holder` keeps,
// for a finding being made whose api, count and bytes are set; its note is added to the notes.
void describe_held(report::Finding& f, const Holder& holder, bool resource);

}  // namespace cuaudit
