#include "device_heap_findings.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "kernel_names.h"

namespace cuaudit {
namespace {

using trace::DeviceHeapCall;

// Where a call came from: the device code that made it and the host stack that launched its kernel.
struct Site {
  uint64_t stack_id = 0;
  std::string kernel;  // as the driver named it
  uint64_t pc = 0;
  bool operator<(const Site& o) const { return std::tie(stack_id, kernel, pc) < std::tie(o.stack_id, o.kernel, o.pc); }
};

struct Tally {
  uint64_t count = 0, bytes = 0, smallest = UINT64_MAX, largest = 0;
  uint64_t first_address = 0;
  uint64_t heap_bytes = 0;
  int32_t device = -1;
  void add(uint64_t size, uint64_t address, const DeviceHeapLaunchFact* l) {
    if (count++ == 0) first_address = address;
    bytes += size;
    smallest = std::min(smallest, size);
    largest = std::max(largest, size);
    if (l) {
      heap_bytes = l->heap_bytes;
      device = l->device;
    }
  }
};

struct Live {
  Site site;
  uint64_t bytes = 0;
};

class DeviceHeapReplay {
 public:
  DeviceHeapReplay(const ProcessTrace& trace, StackResolver& stacks) : trace_(trace), stacks_(stacks) {
    for (const auto& [id, launch] : trace.device_heap_launches) ++launches_[{launch.stack_id, launch.name}];
  }

  std::vector<report::Finding> run() {
    for (const DeviceHeapCallFact& call : trace_.device_heap_calls) take(call);
    // In address order, so a site's address is its lowest block whatever the hash table's order.
    std::vector<std::pair<uint64_t, const Live*>> live;
    for (const auto& [address, block] : live_) live.emplace_back(address, &block);
    std::sort(live.begin(), live.end());
    for (const auto& [address, block] : live) leaks_[block->site].add(block->bytes, address, launch_of(block->site));
    std::vector<report::Finding> findings;
    for (const auto& [site, t] : leaks_) findings.push_back(leak(place(site), t));
    for (const auto& [site, t] : double_frees_) findings.push_back(bad_free(place(site), t, true));
    for (const auto& [site, t] : invalid_frees_) findings.push_back(bad_free(place(site), t, false));
    for (const auto& [site, t] : exhausted_) findings.push_back(exhausted(place(site), t));
    return findings;
  }

 private:
  const DeviceHeapLaunchFact* launch(uint64_t id) const {
    auto it = trace_.device_heap_launches.find(id);
    return it == trace_.device_heap_launches.end() ? nullptr : &it->second;
  }
  const DeviceHeapLaunchFact* launch_of(const Site& site) const {
    return site_launch_.count(site) ? site_launch_.at(site) : nullptr;
  }

  void take(const DeviceHeapCallFact& call) {
    const DeviceHeapLaunchFact* l = launch(call.launch_id);
    const Site site{l ? l->stack_id : 0, l ? l->name : std::string(), call.pc};
    if (l) site_launch_.emplace(site, l);
    if (call.kind == DeviceHeapCall::Malloc) {
      if (call.address == 0) {
        exhausted_[site].add(call.bytes, 0, l);
        return;
      }
      live_[call.address] = {site, call.bytes};
      freed_.erase(call.address);
      return;
    }
    if (call.address == 0) return;  // free(NULL) does nothing
    if (auto it = live_.find(call.address); it != live_.end()) {
      live_.erase(it);
      freed_.insert(call.address);
    } else if (freed_.count(call.address)) {
      double_frees_[site].add(0, call.address, l);
    } else {
      invalid_frees_[site].add(0, call.address, l);
    }
  }

  // "leak_nodes+0x1f0": the call's place in its kernel's code, or its address when it lies outside
  // (in a device function the kernel called).
  std::string device_location(const Site& site) const {
    const std::string kernel =
        site.kernel.empty() ? std::string("an unknown kernel") : kernel_display_name(site.kernel);
    const DeviceHeapLaunchFact* l = launch_of(site);
    if (const std::optional<uint64_t> offset = l ? l->code_offset(site.pc) : std::nullopt) {
      const auto line = trace_.device_heap_lines.find({l->name, *offset});
      if (line != trace_.device_heap_lines.end()) return fmt::format("{}+{:#x} at {}", kernel, *offset, line->second);
      return fmt::format("{}+{:#x}", kernel, *offset);
    }
    return fmt::format("device code at {:#x}, called from {}", site.pc, kernel);
  }

  // "launched 4 times at list.cu:58"
  std::string launches_text(const Site& site) {
    const auto it = launches_.find({site.stack_id, site.kernel});
    const uint64_t n = it == launches_.end() ? 0 : it->second;
    const std::string where = site.stack_id ? stacks_.call_site(site.stack_id) : std::string();
    return fmt::format("{} launched {} time(s){}",
                       site.kernel.empty() ? "its kernel" : kernel_display_name(site.kernel), n,
                       where.empty() ? std::string() : " at " + where);
  }

  static std::string sizes(const Tally& t) {
    if (t.smallest == t.largest) return fmt::format("of {}", report::human_bytes(t.largest));
    return fmt::format("of {} to {}", report::human_bytes(t.smallest), report::human_bytes(t.largest));
  }

  // A site as findings word it, made once per finding.
  struct Place {
    uint64_t stack_id;
    std::string at;        // device_location
    std::string launched;  // launches_text
  };
  Place place(const Site& site) { return {site.stack_id, device_location(site), launches_text(site)}; }

  report::Finding base(report::FindingKind kind, report::Severity severity, const Place& p, const Tally& t) {
    report::Finding f;
    f.kind = kind;
    f.severity = severity;
    f.api = "malloc (device)";
    f.count = t.count;
    f.pid = trace_.pid;
    if (t.device >= 0) f.device = t.device;
    if (t.first_address) f.address = t.first_address;
    f.stack = p.stack_id ? stacks_.user_stack(p.stack_id) : std::vector<report::Frame>{};
    f.notes.push_back("in device code: " + p.at + "; " + p.launched);
    return f;
  }

  report::Finding leak(const Place& p, const Tally& t) {
    report::Finding f = base(report::FindingKind::DeviceHeapLeak, report::Severity::Error, p, t);
    f.bytes = t.bytes;
    f.headline =
        fmt::format("Device heap leak: {} allocation(s) {} ({}) from malloc in {}, never freed; launched at:", t.count,
                    sizes(t), report::human_bytes(t.bytes), p.at);
    f.message = fmt::format(
        "{} device-side allocation(s) {} ({} in all) made by malloc in {} were never freed before the process "
        "ended; {}",
        t.count, sizes(t), report::human_bytes(t.bytes), p.at, p.launched);
    return f;
  }

  report::Finding bad_free(const Place& p, const Tally& t, bool twice) {
    report::Finding f =
        base(twice ? report::FindingKind::DeviceHeapDoubleFree : report::FindingKind::DeviceHeapInvalidFree,
             report::Severity::Error, p, t);
    f.api = "free (device)";
    const std::string what = twice ? "memory it had freed already" : "an address device malloc never returned";
    f.headline =
        fmt::format("Device {}: free in {} of {}, {} time(s); launched at:", twice ? "double free" : "invalid free",
                    p.at, what, t.count);
    f.message = fmt::format("free in {} was given {} ({} time(s), the first {:#x}); {}", p.at, what, t.count,
                            t.first_address, p.launched);
    return f;
  }

  report::Finding exhausted(const Place& p, const Tally& t) {
    report::Finding f = base(report::FindingKind::DeviceHeapExhausted, report::Severity::Warning, p, t);
    f.bytes = t.largest;
    const std::string heap = t.heap_bytes ? fmt::format("the device heap is {}", report::human_bytes(t.heap_bytes))
                                          : "the heap's size was not recorded";
    f.headline = fmt::format(
        "Device heap exhausted: malloc in {} returned NULL {} time(s), largest request {} ({}); launched at:", p.at,
        t.count, report::human_bytes(t.largest), heap);
    f.message = fmt::format("device-side malloc in {} returned NULL {} time(s) (largest request {}; {}); {}", p.at,
                            t.count, report::human_bytes(t.largest), heap, p.launched);
    f.notes.push_back(
        "raise the heap with cudaDeviceSetLimit(cudaLimitMallocHeapSize, bytes) before the first kernel that calls "
        "malloc is launched, free device allocations sooner, and check malloc's result in device code");
    return f;
  }

  const ProcessTrace& trace_;
  StackResolver& stacks_;
  std::map<std::pair<uint64_t, std::string>, uint64_t> launches_;  // (stack, kernel) -> launches
  std::map<Site, const DeviceHeapLaunchFact*> site_launch_;
  std::unordered_map<uint64_t, Live> live_;
  std::unordered_set<uint64_t> freed_;
  std::map<Site, Tally> leaks_, double_frees_, invalid_frees_, exhausted_;
};

}  // namespace

std::vector<report::Finding> device_heap_findings(const ProcessTrace& trace, StackResolver& stacks) {
  if (trace.device_heap_calls.empty()) return {};
  std::vector<report::Finding> findings = DeviceHeapReplay(trace, stacks).run();
  std::stable_sort(findings.begin(), findings.end(),
                   [](const report::Finding& a, const report::Finding& b) { return a.bytes > b.bytes; });
  return findings;
}

}  // namespace cuaudit
