#include "framework_history.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "python_contract.h"
#include "safe_file.h"

namespace cuaudit {
namespace {

using nlohmann::json;
using namespace python_contract;  // the file's actions and columns, declared once (python_contract.inc)

// A million events of PyTorch's history with their stacks take about 100 MB.
constexpr size_t kMaxFrameworkFileBytes = size_t{1} << 30;

// A file's Python stacks get ids of their own beside the trace's (content hashes), after those of
// a file read before (a process with PyTorch and JAX has two); 0: none.
constexpr uint64_t kHistoryStackIds = uint64_t{1} << 63;
constexpr uint64_t kHistoryStackRange = uint64_t{1} << 40;  // the trace's hashes land there by chance only
struct StackIds {
  uint64_t base = kHistoryStackIds;
  uint64_t operator()(uint64_t index) const { return index ? base + index : 0; }
};
StackIds stack_ids_after(const ProcessTrace& process) {
  StackIds ids;
  for (const auto& [id, frames] : process.python_stacks) {
    if (id >= kHistoryStackIds && id - kHistoryStackIds < kHistoryStackRange) ids.base = std::max(ids.base, id);
  }
  return ids;
}

// cudaErrorMemoryAllocation's value, which the out-of-memory check looks for in any allocation.
constexpr int32_t kOutOfMemoryResult = 2;

// PyTorch stamps its events with the wall clock (µs); the trace counts monotonic ns from its start.
uint64_t monotonic_ns(const ProcessTrace& process, uint64_t realtime_us) {
  const uint64_t realtime_ns = realtime_us * 1000;
  if (realtime_ns <= process.start_realtime_ns) return process.start_monotonic_ns;
  return process.start_monotonic_ns + (realtime_ns - process.start_realtime_ns);
}

Event block_event(const FrameworkFile& file, uint32_t pool, bool alloc, int32_t device, uint64_t addr, uint64_t bytes,
                  uint64_t stack, uint64_t ns) {
  Event e;
  e.kind = alloc ? EventKind::Alloc : EventKind::Free;
  e.time_ns = ns;
  MemoryEvent m;
  m.time_ns = ns;
  m.api = alloc ? file.hand_out : file.take_back;
  m.pool = pool;
  m.key = addr;
  m.bytes = alloc ? bytes : 0;
  m.device = device;
  m.python_stack_id = stack;
  e.payload = m;
  return e;
}

Event segment_event(uint32_t pool, bool mapped, int32_t device, uint64_t base, uint64_t bytes, uint64_t ns) {
  Event e;
  e.kind = EventKind::PoolSegment;
  e.time_ns = ns;
  e.payload = PoolSegmentFact{pool, base, bytes, device, mapped};
  return e;
}

// What the allocator said of itself at a moment (XLA's statistics: [device, time_us, reserved,
// used, largest free block]).
Event figures_event(const ProcessTrace& process, uint32_t pool, const json& row) {
  Event e;
  e.kind = EventKind::PoolFigures;
  e.time_ns = monotonic_ns(process, row.at(1).get<uint64_t>());
  e.payload = PoolFiguresFact{pool, row.at(0).get<int32_t>(), row.at(2).get<uint64_t>(), row.at(3).get<uint64_t>(),
                              row.at(4).get<uint64_t>()};
  return e;
}

void add_pool(const FrameworkFile& file, ProcessTrace& process, uint32_t pool) {
  PoolInfo info;
  info.kind = file.source;
  info.name = std::string(source_info(file.source).description);
  process.pools[pool] = info;
}

uint64_t optional_at(const json& e, size_t i) { return e.size() > i ? e.at(i).get<uint64_t>() : 0; }

// The history's events, as events of pool `pool` (not yet in time order), and what they say.
struct HistoryEvents {
  std::map<std::pair<int32_t, uint64_t>, bool> block_live, segment_live;  // (device, address) -> live
  uint64_t allocations = 0, frees = 0, segments = 0;
  std::vector<FrameworkOom> ooms;
};
HistoryEvents read_events(const FrameworkFile& file, const json& doc, const ProcessTrace& process, uint32_t pool,
                          const StackIds& stack_id, std::vector<Event>& events) {
  HistoryEvents read;
  for (const json& e : doc.at("events")) {
    const auto device = e.at(kColumnDevice).get<int32_t>();
    const int action = e.at(kColumnAction).get<int>();
    const auto addr = e.at(kColumnAddress).get<uint64_t>();
    const auto bytes = e.at(kColumnBytes).get<uint64_t>();
    const uint64_t ns = monotonic_ns(process, e.at(kColumnTimeUs).get<uint64_t>());
    switch (action) {
      case kAlloc:
      case kFreeCompleted:
        events.push_back(block_event(file, pool, action == kAlloc, device, addr, bytes,
                                     action == kAlloc ? stack_id(e.at(kColumnStack).get<uint64_t>()) : 0, ns));
        read.block_live[{device, addr}] = action == kAlloc;
        ++(action == kAlloc ? read.allocations : read.frees);
        break;
      case kSegmentAlloc:
      case kSegmentMap:
      case kSegmentFree:
      case kSegmentUnmap: {
        const bool mapped = action == kSegmentAlloc || action == kSegmentMap;
        events.push_back(segment_event(pool, mapped, device, addr, bytes, ns));
        read.segment_live[{device, addr}] = mapped;
        read.segments += mapped;
        break;
      }
      case kOom: {  // PyTorch's entry keeps the device's free bytes where a block's address would be;
                    // XLA's has its allocator's statistics after the stack
        read.ooms.push_back({pool, ns, device, bytes, addr, optional_at(e, kColumnStack + 1),
                             optional_at(e, kColumnStack + 2), optional_at(e, kColumnStack + 3)});
        // The allocator's own out-of-memory error, a failed block allocation at the Python line
        // that asked (PyTorch's hooks before version 2 of its format wrote no stack for it).
        Event failed = block_event(file, pool, true, device, 0, bytes, stack_id(optional_at(e, kColumnStack)), ns);
        failed.memory().result = kOutOfMemoryResult;
        events.push_back(failed);
        break;
      }
      default:  // an action a newer hook writes
        break;
    }
  }
  return read;
}

// When the hooks wrote the file, as the notes say it: at exit, or at a moment of the run after which
// nothing of the framework's blocks is seen (a snapshot of a running program, a process killed).
std::string when_written(const json& doc, const ProcessTrace& process) {
  const std::string at = doc.value("written_at", "exit");
  if (at == "exit") return "at exit";
  const auto written_us = doc.value("written_us", uint64_t{0});
  const std::string moment =
      written_us
          ? fmt::format(" at {:.1f} s",
                        static_cast<double>(monotonic_ns(process, written_us) - process.start_monotonic_ns) / 1e9)
          : std::string();
  if (at == "running") {
    return fmt::format(
        "when the hooks last wrote the file while the program ran{} (blocks handed out or taken back "
        "after are not seen: a snapshot, or a process that did not reach its exit handlers, killed?)",
        moment);
  }
  return fmt::format(
      "when the file was last written{} (at an out-of-memory error; the process did not reach its "
      "exit handlers)",
      moment);
}

}  // namespace

namespace {

// A framework's file as python_contract.inc declares it: its name, format, version and source.
FrameworkFile framework_file(Framework f, Api hand_out, Api take_back, const char* framework, const char* facility) {
  const FrameworkInfo& info = framework_info(f);
  return {*info.file, info.format, info.version, source_by_key(info.source_key)->source,
          hand_out,   take_back,   framework,    facility};
}

}  // namespace

const FrameworkFile kTorchBlocksFile = framework_file(Framework::Torch, Api::torchBlockAlloc, Api::torchBlockFree,
                                                      "PyTorch's caching allocator", "its memory history");
const FrameworkFile kJaxArraysFile =
    framework_file(Framework::Jax, Api::xlaBufferAlloc, Api::xlaBufferFree, "XLA's GPU allocator (JAX)",
                   "JAX's live arrays, listed as the program ran");
const FrameworkFile* const kFrameworkFiles[2] = {&kTorchBlocksFile, &kJaxArraysFile};

// A framework's file as the hooks write it, kept in memory as far as it is what they write (the
// reliability review of 2026-12-04, F12: a 200 MB file of `[0,0,...]` under a key nobody reads took
// 3.9 GB as a whole document): keys the reader does not use are skipped as they are parsed, each row
// of a list is an array of at most kMaxRowValues values, and the whole at most kMaxFileValues
// (about 8 million of PyTorch's events, 80 times the hooks' default per device); beyond, the
// file is refused before it grows further.
json parse_framework_file(const std::string& text) {
  constexpr size_t kMaxRowValues = size_t{1} << 16, kMaxFileValues = size_t{1} << 26;
  static const std::set<std::string_view> kLists = {"events", "live", "segments", "frames", "stats"};
  static const std::set<std::string_view> kFields = {"format", "version", "max_entries", "written_at", "written_us"};
  std::string key;  // the top-level key being read
  size_t row_values = 0, values = 0;
  const json::parser_callback_t keep = [&](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (depth == 1 && event == E::key) {
      key = parsed.get<std::string>();
      return kLists.count(key) > 0 || kFields.count(key) > 0;
    }
    // No hook writes a fraction, and converting one that does not fit to an integer is undefined
    // behaviour (fuzz_run_dir found it in symbols.json's lines).
    if (event == E::value && parsed.is_number_float() && (kLists.count(key) || kFields.count(key)))
      throw std::runtime_error(fmt::format("\"{}\" holds a number with a fraction, which no hook writes", key));
    if (depth < 2 || !kLists.count(key)) return true;
    if (depth == 2 && (event == E::array_start || event == E::object_start)) row_values = 0;
    if (depth == 2 && event == E::value) throw std::runtime_error(fmt::format("a row of \"{}\" is not a list", key));
    if (event == E::value && ++row_values > kMaxRowValues)
      throw std::runtime_error(
          fmt::format("a row of \"{}\" holds more than {} values, which no hook writes", key, kMaxRowValues));
    if (event == E::value && ++values > kMaxFileValues)
      throw std::runtime_error(
          fmt::format("its lists hold more than {} values, more than cuaudit reads", kMaxFileValues));
    return true;
  };
  return json::parse(text, keep);
}

FrameworkHistory framework_history(const FrameworkFile& file, const std::string& json_text, ProcessTrace& process,
                                   std::vector<std::string>& notes) {
  const json doc = parse_framework_file(json_text);
  const int version = doc.value("version", 0);
  if (doc.value("format", "") != file.format || version < 1 || version > file.max_version) {
    throw std::runtime_error(fmt::format("not a {} file of version 1 to {}", file.format, file.max_version));
  }
  // Everything is read before the trace is touched: a malformed file changes nothing.
  std::vector<std::vector<PythonFrameInfo>> stacks;
  for (const json& stack : doc.at("frames")) {
    std::vector<PythonFrameInfo> frames;
    for (const json& f : stack)
      frames.push_back({f.at(0).get<std::string>(), f.at(1).get<uint32_t>(), f.at(2).get<std::string>()});
    stacks.push_back(std::move(frames));
  }
  FrameworkHistory out;
  // The pool's number: the next after the trace's own pools.
  const uint32_t pool = process.pools.empty() ? 1 : process.pools.rbegin()->first + 1;
  const StackIds stack_id = stack_ids_after(process);
  HistoryEvents read = read_events(file, doc, process, pool, stack_id, out.events);
  uint64_t segments = read.segments;
  // What was allocated at exit but came before the history (it keeps the most recent events):
  // allocated at the start.
  const uint64_t early_ns = process.start_monotonic_ns;
  uint64_t before_history = 0;
  for (const json& b : doc.at("live")) {
    const auto device = b.at(0).get<int32_t>();
    const auto addr = b.at(1).get<uint64_t>();
    if (auto it = read.block_live.find({device, addr}); it != read.block_live.end() && it->second) continue;
    out.events.push_back(block_event(file, pool, true, device, addr, b.at(2).get<uint64_t>(),
                                     stack_id(b.at(3).get<uint64_t>()), early_ns));
    ++before_history;
  }
  for (const json& s : doc.value("segments", json::array())) {
    const auto device = s.at(0).get<int32_t>();
    const auto addr = s.at(1).get<uint64_t>();
    if (auto it = read.segment_live.find({device, addr}); it != read.segment_live.end() && it->second) continue;
    out.events.push_back(segment_event(pool, true, device, addr, s.at(2).get<uint64_t>(), early_ns));
    ++segments;
  }
  for (const json& row : doc.value("stats", json::array())) out.events.push_back(figures_event(process, pool, row));
  std::stable_sort(out.events.begin(), out.events.end(),
                   [](const Event& a, const Event& b) { return a.time_ns < b.time_ns; });
  out.any_block = std::any_of(out.events.begin(), out.events.end(),
                              [](const Event& e) { return e.kind == EventKind::Alloc && e.memory().result == 0; });
  // With the cache off there are no blocks: every tensor is a cudaMalloc of its own, judged as such.
  if (!out.any_block) out.events.clear();

  if (out.any_block) add_pool(file, process, pool);
  for (size_t i = 0; i < stacks.size(); ++i) process.python_stacks.emplace(stack_id(i + 1), std::move(stacks[i]));
  for (const FrameworkOom& oom : read.ooms) process.framework_ooms.push_back(oom);
  const auto max_entries = doc.value("max_entries", uint64_t{0});
  const std::string end = when_written(doc, process);
  notes.push_back(fmt::format(
      "{}: {} block allocation(s) and {} free(s) seen in {}{}; {} block(s) still allocated {}{}{}", file.framework,
      read.allocations, read.frees, file.facility,
      before_history ? fmt::format(" (it keeps the last {} events a device: {} block(s) allocated at exit came "
                                   "before them, counted as allocated at the start)",
                                   max_entries, before_history)
                     : std::string(),
      doc.at("live").size(), end,
      segments ? fmt::format("; {} segment(s) reserved from CUDA", segments) : std::string(),
      read.ooms.empty() ? std::string() : fmt::format("; {} out-of-memory error(s) it raised", read.ooms.size())));
  return out;
}

std::optional<FrameworkHistory> load_framework_history(const FrameworkFile& file, const std::string& dir,
                                                       ProcessTrace& process, std::vector<std::string>& notes) {
  const std::string path = fmt::format("{}/{}{}{}", dir, file.entry.prefix, process.pid, file.entry.suffix);
  if (access(path.c_str(), F_OK) != 0) return std::nullopt;  // not such a process, or its hooks were off
  std::string text, error;
  // As any file of a run directory received from elsewhere: a regular file, of a bounded size.
  if (!read_regular_file(path, kMaxFrameworkFileBytes, text, error, Links::Refuse)) {
    notes.push_back(fmt::format("{}: {}'s blocks are not judged", error, file.framework));
    process.side_file_damaged = true;
    return std::nullopt;
  }
  try {
    return framework_history(file, text, process, notes);
  } catch (const std::exception& e) {
    notes.push_back(
        fmt::format("{} could not be read ({}): {}'s blocks are not judged", path, e.what(), file.framework));
    process.side_file_damaged = true;
    return std::nullopt;
  }
}

std::vector<Event> load_framework_histories(const std::string& dir, ProcessTrace& process,
                                            std::vector<std::string>& notes) {
  std::vector<Event> events;
  for (const FrameworkFile* file : kFrameworkFiles) {
    std::optional<FrameworkHistory> history = load_framework_history(*file, dir, process, notes);
    if (!history) continue;
    const auto middle = static_cast<std::ptrdiff_t>(events.size());
    events.insert(events.end(), history->events.begin(), history->events.end());
    std::inplace_merge(events.begin(), events.begin() + middle, events.end(),
                       [](const Event& a, const Event& b) { return a.time_ns < b.time_ns; });
  }
  return events;
}

}  // namespace cuaudit
