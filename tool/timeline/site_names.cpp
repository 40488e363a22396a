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
  out.stack = site_stack(trace, key.stack_id, key.python_stack_id, stacks);
  return out;
}

std::vector<report::Frame> site_stack(const ProcessTrace& trace, uint64_t stack_id, uint64_t python_stack_id,
                                      StackResolver& stacks) {
  std::vector<report::Frame> stack = stacks.user_stack(stack_id);
  if (python_stack_id) {
    std::vector<report::Frame> python = python_frames(trace, python_stack_id);
    const size_t user = user_python_frame(python);
    if (user < python.size())
      stack.insert(stack.end(), python.begin() + static_cast<std::ptrdiff_t>(user), python.end());
  }
  return stack;
}

}  // namespace cuaudit
