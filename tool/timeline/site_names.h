// What a chart, the metrics or a profile call an allocation site of the site history: its API and
// the user's frames, native then Python (the site label picks the user's Python line where there is
// one); a pool's cache ("reserve") by its pool.
#pragma once

#include <string>
#include <vector>

#include "report_model.h"
#include "site_history.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

struct SiteName {
  std::string api;
  std::vector<report::Frame> stack;
  std::string site;  // set here for a pool's reserve only; the others are labelled from the stack
};

SiteName name_site(const ProcessTrace& trace, const SiteHistory::Key& key, StackResolver& stacks);

// A site's frames: the user's native frames, then its Python frames from the user's own line out.
std::vector<report::Frame> site_stack(const ProcessTrace& trace, uint64_t stack_id, uint64_t python_stack_id,
                                      StackResolver& stacks);

}  // namespace cuaudit
