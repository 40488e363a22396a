#include "stack_resolver.h"

#include "frame_filter.h"

namespace cuaudit {

const ModuleInfo* StackResolver::module_for(uint64_t address) const {
  // The latest recorded module wins: a library unloaded and another loaded at its place.
  for (auto it = trace_.modules.rbegin(); it != trace_.modules.rend(); ++it) {
    if (address >= it->start && address < it->end) return &*it;
  }
  return nullptr;
}

const std::vector<report::Frame>& StackResolver::user_stack(uint64_t stack_id) {
  auto found = resolved_.find(stack_id);
  if (found != resolved_.end()) return found->second;
  std::vector<report::Frame> frames;
  auto raw = trace_.stacks.find(stack_id);
  if (raw != trace_.stacks.end()) {
    for (uint64_t address : raw->second) {
      for (auto& f : symbolizer_.symbolize(address, module_for(address))) frames.push_back(std::move(f));
    }
  }
  return resolved_.emplace(stack_id, user_frames(std::move(frames))).first->second;
}

}  // namespace cuaudit
