#include "site_names.h"

#include <fmt/format.h>

#include "pool_names.h"
#include "python_frames.h"

namespace cuaudit {

SiteName name_site(const ProcessTrace& trace, const SiteHistory::Key& key, StackResolver& stacks) {
  SiteName out;
  out.api = std::string(api_info(key.is_reserve() ? key.api : stacks.api_called(key.stack_id, key.api)).name);
  if (key.is_reserve()) {
    out.site = fmt::format("{}, reserved and not handed out", pool_description(trace.pools, key.pool));
    return out;
  }
  out.stack = stacks.user_stack(key.stack_id);
  if (key.python_stack_id) {
    std::vector<report::Frame> python = python_frames(trace, key.python_stack_id);
    const size_t user = user_python_frame(python);
    if (user < python.size())
      out.stack.insert(out.stack.end(), python.begin() + static_cast<std::ptrdiff_t>(user), python.end());
  }
  return out;
}

}  // namespace cuaudit
