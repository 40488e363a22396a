#include "memory_viz_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "pickle_writer.h"
#include "text_helpers.h"

namespace cuaudit::report {
namespace {

const char* action_name(VizAction a) {
  switch (a) {
    case VizAction::SegmentAlloc:
      return "segment_alloc";
    case VizAction::Alloc:
      return "alloc";
    case VizAction::FreeRequested:
      return "free_requested";
    case VizAction::FreeCompleted:
      return "free_completed";
    case VizAction::SegmentFree:
      return "segment_free";
  }
  return "alloc";
}

// The stacks are written once each and recalled from the pickle's memo after that: a loop's
// thousand allocations share one list of frames.
class SnapshotWriter {
 public:
  explicit SnapshotWriter(const MemoryViz& viz) : viz_(viz), memo_(viz.stacks.size(), kUnwritten) {}

  void frames(uint32_t stack) {
    if (stack >= viz_.stacks.size()) stack = 0;
    if (memo_[stack] != kUnwritten) return p_.recall(memo_[stack]);
    p_.begin_list();
    for (const Frame& f : viz_.stacks[stack]) {
      p_.begin_dict();
      // A frame without a source file names its module, as PyTorch's C++ frames do.
      p_.key("filename");
      p_.text(valid_utf8(!f.file.empty() ? f.file : f.module.empty() ? std::string("??") : f.module));
      p_.key("line");
      p_.integer(f.line);
      p_.key("name");
      p_.text(valid_utf8(!f.function.empty() ? f.function : fmt::format("{:#x}", f.module_offset)));
      p_.end_dict();
    }
    p_.end_list();
    memo_[stack] = p_.memoize();
  }

  void block(const VizBlock& b) {
    p_.begin_dict();
    p_.key("address");
    p_.unsigned_integer(b.address);
    p_.key("size");
    p_.unsigned_integer(b.size);
    p_.key("requested_size");
    p_.unsigned_integer(b.active ? b.size : 0);
    p_.key("state");
    p_.text(b.active ? "active_allocated" : "inactive");
    p_.key("frames");
    frames(b.stack);
    p_.end_dict();
  }

  void segment(const VizSegment& s) {
    uint64_t active = 0;
    for (const VizBlock& b : s.blocks) active += b.active ? b.size : 0;
    p_.begin_dict();
    const std::pair<const char*, uint64_t> sizes[] = {{"address", s.address},
                                                      {"total_size", s.size},
                                                      {"allocated_size", active},
                                                      {"active_size", active},
                                                      {"requested_size", active}};
    p_.key("device");
    p_.integer(s.device);
    for (const auto& [name, value] : sizes) {
      p_.key(name);
      p_.unsigned_integer(value);
    }
    p_.key("stream");
    p_.integer(0);
    p_.key("segment_type");
    p_.text(s.size >= (1u << 20) ? "large" : "small");  // PyTorch's pools: up to 1 MiB is small
    p_.key("segment_pool_id");
    p_.integer(0);
    p_.integer(0);
    p_.tuple2();
    p_.key("is_expandable");
    p_.boolean(false);
    p_.key("frames");
    frames(s.stack);
    p_.key("blocks");
    p_.begin_list();
    for (const VizBlock& b : s.blocks) block(b);
    p_.end_list();
    p_.end_dict();
  }

  void entry(const VizEntry& e) {
    p_.begin_dict();
    p_.key("action");
    p_.text(action_name(e.action));
    p_.key("addr");
    p_.unsigned_integer(e.address);
    p_.key("size");
    p_.unsigned_integer(e.size);
    p_.key("stream");
    p_.integer(0);
    p_.key("time_us");
    p_.unsigned_integer(e.time_us);
    p_.key("frames");
    frames(e.stack);
    p_.end_dict();
  }

  std::string snapshot() {
    p_.begin_dict();
    p_.key("segments");
    p_.begin_list();
    for (const VizSegment& s : viz_.segments) segment(s);
    p_.end_list();
    int devices = 0;
    for (const VizSegment& s : viz_.segments) devices = std::max(devices, s.device + 1);
    for (const VizEntry& e : viz_.entries) devices = std::max(devices, e.device + 1);
    p_.key("device_traces");
    p_.begin_list();
    for (int d = 0; d < devices; ++d) {
      p_.begin_list();
      for (const VizEntry& e : viz_.entries) {
        if (e.device == d) entry(e);
      }
      p_.end_list();
    }
    p_.end_list();
    // What PyTorch says of its own history; here: which process, and whether the oldest were left out.
    p_.key("allocator_settings");
    p_.begin_dict();
    p_.key("recorded_by");
    p_.text(fmt::format("cuaudit, process {}", viz_.pid));
    p_.key("trace_alloc_overflowed");
    p_.boolean(viz_.entries_left_out > 0);
    p_.key("trace_entries_left_out");
    p_.unsigned_integer(viz_.entries_left_out);
    p_.end_dict();
    p_.end_dict();
    return p_.finish();
  }

 private:
  static constexpr uint32_t kUnwritten = UINT32_MAX;
  const MemoryViz& viz_;
  std::vector<uint32_t> memo_;
  PickleWriter p_;
};

}  // namespace

std::string render_memory_viz(const Report& report) {
  static const MemoryViz kNone = [] {
    MemoryViz v;
    v.stacks.emplace_back();
    return v;
  }();
  return SnapshotWriter(report.memory_viz ? *report.memory_viz : kNone).snapshot();
}

}  // namespace cuaudit::report
