#include "torch_blocks.h"

#include <unistd.h>
#include <algorithm>

#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "growth_findings.h"
#include "replay.h"
#include "run_bounds.h"
#include "safe_file.h"
#include "stack_resolver.h"

namespace cuaudit {
namespace {

using nlohmann::json;

// A million events of PyTorch's history with their stacks take about 100 MB.
constexpr size_t kMaxTorchBlocksBytes = size_t{1} << 30;

// PyTorch stamps its events with the wall clock (µs); the trace counts monotonic ns from its start.
uint64_t monotonic_ns(const ProcessTrace& process, uint64_t realtime_us) {
  const uint64_t realtime_ns = realtime_us * 1000;
  if (realtime_ns <= process.start_realtime_ns) return process.start_monotonic_ns;
  return process.start_monotonic_ns + (realtime_ns - process.start_realtime_ns);
}

bool caching_allocator_growth(const report::Finding& f) {
  if (f.kind != report::FindingKind::Growth) return false;
  auto in = [](const std::vector<report::Frame>& stack) {
    return std::any_of(stack.begin(), stack.end(), [](const report::Frame& frame) {
      return frame.function.find("CUDACachingAllocator") != std::string::npos;
    });
  };
  return in(f.stack) ||
         std::any_of(f.related.begin(), f.related.end(), [&](const report::RelatedStack& r) { return in(r.stack); });
}

// What the blocks held on each device, after each change of the replay's live set (at the time of
// the event that changed it: a block's free, not its allocation, ends it).
struct BlocksHeld : ReplayObserver {
  explicit BlocksHeld(const ProcessTrace& process) : process(process) {}
  void on_event(const Event& e) override { event_ns = e.time_ns; }
  void on_live(const MemoryEvent& m) override { change(m.device, m.bytes, 0); }
  void on_gone(const MemoryEvent& m) override { change(m.device, 0, m.bytes); }
  void change(int32_t device, uint64_t added, uint64_t removed) {
    uint64_t& now = bytes[device];
    now = now + added - removed;
    changes[device].emplace_back(process.seconds_since_start(event_ns), now);
  }
  const ProcessTrace& process;
  uint64_t event_ns = 0;
  std::map<int32_t, uint64_t> bytes;
  std::map<int32_t, std::vector<std::pair<double, uint64_t>>> changes;  // device -> (t, bytes)
};

}  // namespace

ProcessTrace torch_block_trace(const std::string& json_text, const ProcessTrace& process,
                               std::vector<std::string>& notes) {
  const json doc = json::parse(json_text);
  if (doc.value("format", "") != "cuaudit-torch-blocks" || doc.value("version", 0) != 1) {
    throw std::runtime_error("not a cuaudit-torch-blocks file of version 1");
  }
  ProcessTrace blocks;
  blocks.pid = process.pid;
  blocks.command = process.command;
  blocks.start_realtime_ns = process.start_realtime_ns;
  blocks.start_monotonic_ns = process.start_monotonic_ns;
  blocks.reached_exit = process.reached_exit;
  blocks.devices = process.devices;
  uint64_t id = 0;
  for (const json& stack : doc.at("frames")) {
    std::vector<PythonFrameInfo> frames;
    for (const json& f : stack)
      frames.push_back({f.at(0).get<std::string>(), f.at(1).get<uint32_t>(), f.at(2).get<std::string>()});
    blocks.python_stacks.emplace(++id, std::move(frames));
  }

  // The history's events, in time order, then the blocks live at exit whose allocation the history
  // no longer holds (it keeps the most recent events): allocated before its first event.
  struct Timed {
    uint64_t time_ns;
    Event event;
  };
  std::vector<Timed> timed;
  auto block_event = [&](bool alloc, int32_t device, uint64_t addr, uint64_t bytes, uint64_t stack, uint64_t ns) {
    Event e;
    e.kind = alloc ? EventKind::Alloc : EventKind::Free;
    e.time_ns = ns;
    MemoryEvent m;
    m.time_ns = ns;
    m.api = alloc ? Api::torchBlockAlloc : Api::torchBlockFree;
    m.key = addr;
    m.bytes = alloc ? bytes : 0;
    m.device = device;
    m.python_stack_id = stack;
    e.payload = m;
    timed.push_back({ns, std::move(e)});
  };
  std::map<std::pair<int32_t, uint64_t>, bool> live_in_history;  // (device, address) -> live
  uint64_t allocations = 0, frees = 0;
  for (const json& e : doc.at("events")) {
    const auto device = e.at(0).get<int32_t>();
    const bool alloc = e.at(1).get<int>() == 1;
    const auto addr = e.at(2).get<uint64_t>();
    const uint64_t ns = monotonic_ns(process, e.at(5).get<uint64_t>());
    block_event(alloc, device, addr, e.at(3).get<uint64_t>(), e.at(6).get<uint64_t>(), ns);
    live_in_history[{device, addr}] = alloc;
    ++(alloc ? allocations : frees);
  }
  uint64_t before_history = 0;
  const uint64_t early_ns = process.start_monotonic_ns;
  for (const json& b : doc.at("live")) {
    const auto device = b.at(0).get<int32_t>();
    const auto addr = b.at(1).get<uint64_t>();
    if (auto it = live_in_history.find({device, addr}); it != live_in_history.end() && it->second) continue;
    block_event(true, device, addr, b.at(2).get<uint64_t>(), b.at(3).get<uint64_t>(), early_ns);
    ++before_history;
  }
  std::stable_sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) { return a.time_ns < b.time_ns; });

  // One order for blocks and samples, by time: the samples say when the program's work ended.
  uint64_t seq = 0;
  size_t s = 0;
  for (Timed& t : timed) {
    for (; s < process.samples.size() && process.samples[s].time_ns <= t.time_ns; ++s) {
      blocks.samples.push_back(process.samples[s]);
      blocks.samples.back().seq = ++seq;
    }
    t.event.seq = ++seq;
    t.event.memory().seq = seq;
    blocks.events.push_back(std::move(t.event));
  }
  for (; s < process.samples.size(); ++s) {
    blocks.samples.push_back(process.samples[s]);
    blocks.samples.back().seq = ++seq;
  }
  Event end;
  end.kind = EventKind::ProcessEnd;
  end.seq = ++seq;
  end.time_ns = blocks.events.empty() ? process.start_monotonic_ns : blocks.events.back().time_ns;
  blocks.events.push_back(end);

  const auto max_entries = doc.value("max_entries", uint64_t{0});
  notes.push_back(fmt::format(
      "PyTorch's caching allocator: {} block allocation(s) and {} free(s) seen in its memory history{}; {} "
      "block(s) still allocated at exit",
      allocations, frees,
      before_history ? fmt::format(" (it keeps the last {} events a device: {} block(s) allocated at exit came "
                                   "before them, counted as allocated at the start)",
                                   max_entries, before_history)
                     : std::string(),
      doc.at("live").size()));
  return blocks;
}

void analyze_torch_blocks(const std::string& dir, const ProcessTrace& process, Symbolizer& symbolizer,
                          std::vector<report::Finding>& findings, std::vector<std::string>& notes,
                          report::Timeline& timeline) {
  const std::string path = fmt::format("{}/{}{}{}", dir, kTorchBlocksPrefix, process.pid, run_dir::TorchBlocks.suffix);
  if (access(path.c_str(), F_OK) != 0) return;  // not a PyTorch process, or its hooks were off
  std::string text, error;
  // As any file of a run directory received from elsewhere: a regular file, of a bounded size.
  if (!read_regular_file(path, kMaxTorchBlocksBytes, text, error)) {
    notes.push_back(fmt::format("{}: PyTorch's blocks are not judged", error));
    return;
  }
  ProcessTrace blocks;
  try {
    blocks = torch_block_trace(text, process, notes);
  } catch (const std::exception& e) {
    notes.push_back(fmt::format("{} could not be read ({}): PyTorch's blocks are not judged", path, e.what()));
    return;
  }
  // The blocks explain the segments' growth, at the line that allocated them: the segments' finding
  // (named after the caching allocator) goes. With the cache off there are no blocks: every tensor
  // is a cudaMalloc of its own, judged as such.
  const bool any_block = std::any_of(blocks.events.begin(), blocks.events.end(),
                                     [](const Event& e) { return e.kind == EventKind::Alloc; });
  if (!any_block) return;
  findings.erase(std::remove_if(findings.begin(), findings.end(), caching_allocator_growth), findings.end());
  // One replay of the blocks: growth, and what they held on each device after each change.
  GrowthObserver growth(blocks);
  RunBounds bounds;
  BlocksHeld held(process);
  ObserverList observers;
  observers.add(&growth);
  observers.add(&bounds);
  observers.add(&held);
  const ReplayResult result = replay(blocks, &observers);
  StackResolver stacks(blocks, symbolizer);
  for (auto& f : growth_findings(blocks, growth, bounds, result.leaks, stacks)) findings.push_back(std::move(f));

  // Each of the process's samples gets what the blocks held then: allocated, beside the segments
  // the samples' `tracked` counts (reserved).
  for (report::TimelineSample& sample : timeline.samples) {
    if (sample.pid != process.pid) continue;
    auto it = held.changes.find(sample.device);
    if (it == held.changes.end()) continue;
    const auto& changes = it->second;
    auto after = std::upper_bound(changes.begin(), changes.end(), sample.t,
                                  [](double t, const std::pair<double, uint64_t>& c) { return t < c.first; });
    sample.blocks = after == changes.begin() ? 0 : std::prev(after)->second;
  }
}

}  // namespace cuaudit
