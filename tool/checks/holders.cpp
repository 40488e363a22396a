#include "holders.h"

#include <fmt/format.h>

#include "library_handles.h"

namespace cuaudit {
namespace {

std::vector<report::Frame> mapped(std::vector<report::Frame> frames, const std::vector<PathMapping>& paths) {
  for (report::Frame& f : frames) f.file = map_path(f.file, paths);
  return frames;
}

}  // namespace

std::optional<Holder> Holders::held(report::FindingKind kind, const Owner& owner,
                                    const std::vector<report::Frame>& stack,
                                    const std::vector<report::RelatedStack>& related, uint64_t bytes) {
  if (owner.held_on_purpose()) {
    return Holder{source_info(owner.source).description,
                  fmt::format("memory {} took to hand out its blocks (its reserve: the segments its hooks recorded, "
                              "or the allocation its blocks lay in), kept for reuse until the process ends",
                              source_info(owner.source).description)};
  }
  if (kind == report::FindingKind::Leak) {
    if (std::optional<HeldHandle> handle = framework_handle(stack)) return Holder{handle->holder, handle->note};
  }
  // A leak's frames from the library's create call outwards, copied only when there is one: a
  // report of a million leak sites asks this once per site.
  const size_t create = kind == report::FindingKind::Leak ? create_frame(stack) : 0;
  std::vector<report::Frame> from_create;
  if (create > 0) from_create.assign(stack.begin() + static_cast<std::ptrdiff_t>(create), stack.end());
  const std::vector<report::Frame>& frames = create > 0 ? from_create : stack;
  std::optional<std::string> allocator;
  if (paths_.empty()) {
    allocator = rules_.holder_of(kind, frames, related, bytes);
  } else {
    std::vector<report::RelatedStack> related_mapped = related;
    for (report::RelatedStack& r : related_mapped) r.stack = mapped(std::move(r.stack), paths_);
    allocator = rules_.holder_of(kind, mapped(frames, paths_), related_mapped, bytes);
  }
  if (!allocator) return std::nullopt;
  return Holder{*allocator, ""};
}

void describe_held(report::Finding& f, const Holder& holder, bool resource) {
  f.kind = report::FindingKind::HeldByAllocator;
  f.severity = report::Severity::Info;
  if (!holder.note.empty()) f.notes.push_back(holder.note);
  const std::string& allocator = holder.allocator;
  if (resource) {
    f.headline = fmt::format("Held by {}: {} handle(s) ({}) at exit, from:", allocator, f.count, f.api);
    f.message = fmt::format("{} handle(s) from {} are held by {} until the process ends; that is its design", f.count,
                            f.api, allocator);
    return;
  }
  f.headline =
      fmt::format("Held by {}: {} byte(s) in {} allocation(s) ({}) at exit, from:", allocator, f.bytes, f.count, f.api);
  f.message = fmt::format(
      "{} byte(s) in {} allocation(s) from {} are held by {} until the process ends; that is "
      "its design, not a leak of the program",
      f.bytes, f.count, f.api, allocator);
}

}  // namespace cuaudit
