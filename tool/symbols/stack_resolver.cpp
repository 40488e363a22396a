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

const StackResolver::Resolved& StackResolver::resolve(uint64_t stack_id) {
  auto found = resolved_.find(stack_id);
  if (found != resolved_.end()) return found->second;
  std::vector<report::Frame> frames;
  std::vector<RawFrame> raw_frames;
  std::vector<size_t> outermost;  // per raw frame: index of its outermost location in `frames`
  auto raw = trace_.stacks.find(stack_id);
  if (raw != trace_.stacks.end()) {
    for (uint64_t address : raw->second) {
      const ModuleInfo* module = module_for(address);
      for (auto& f : symbolizer_.symbolize(address, module)) frames.push_back(std::move(f));
      raw_frames.push_back({address, module});
      outermost.push_back(frames.size() - 1);
    }
  }
  // The outermost location of a return address holds the call instruction; inlined CUDA
  // wrappers sit above it. The judge starts at the first return address that is the program's.
  const std::vector<bool> internal = internal_frames(frames);
  std::vector<RawFrame> raw_user;
  for (size_t i = 0; i < raw_frames.size(); ++i) {
    if (!raw_user.empty() || !internal[outermost[i]]) raw_user.push_back(raw_frames[i]);
  }
  Resolved r{{}, called_function(frames), std::move(raw_user)};
  r.user_frames = user_frames(std::move(frames));
  // Kept for the whole report, one per stack: without the room push_back left (16 frames' for 12),
  // a million-site report is a quarter smaller.
  r.user_frames.shrink_to_fit();
  r.user_raw_frames.shrink_to_fit();
  return resolved_.emplace(stack_id, std::move(r)).first->second;
}

const std::vector<report::Frame>& StackResolver::user_stack(uint64_t stack_id) { return resolve(stack_id).user_frames; }

const std::vector<RawFrame>& StackResolver::user_raw_frames(uint64_t stack_id) {
  return resolve(stack_id).user_raw_frames;
}

Api StackResolver::api_called(uint64_t stack_id, Api recorded) {
  const std::string& name = resolve(stack_id).called_function;
  if (name.empty() || name == api_info(recorded).name) return recorded;
  for (size_t i = 0; i < static_cast<size_t>(Api::Count); ++i) {
    const ApiInfo& candidate = kApiInfo[i];
    // Only a wrapper of the same role and family renames: never turn a free into an alloc.
    if (candidate.name == name && candidate.role == api_info(recorded).role &&
        candidate.family == api_info(recorded).family) {
      return static_cast<Api>(i);
    }
  }
  return recorded;
}

}  // namespace cuaudit

namespace cuaudit {

std::string StackResolver::call_site(uint64_t stack_id) {
  const auto& frames = user_stack(stack_id);
  if (frames.empty()) return "an unknown place";
  const report::Frame& f = frames.front();
  if (!f.file.empty()) return f.line > 0 ? f.file + ":" + std::to_string(f.line) : f.file;
  return f.function.empty() ? "an unknown place" : f.function;
}

}  // namespace cuaudit
