#include "growth_findings.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_set>

#include <fmt/format.h>

#include "python_frames.h"
#include "replay.h"

namespace cuaudit {
namespace {

struct Site {
  std::vector<const MemoryEvent*> allocations;  // in trace order
  uint64_t bytes = 0;
  std::vector<report::Frame> python;  // the first allocation's Python stack
  size_t user = 0;                    // its user frame
};

// Kernel launches before an allocation: its own count when it has one (allocations from Python
// record it), else from the memory samples around it (every 10 ms by default), the launches between
// two taken as spread evenly over the time between them: a fast loop launches dozens in one
// interval, and a framework's blocks (PyTorch's history, by its own clock) carry no count. On the
// H200 a torch.compile'd loop's 30 kept outputs read as "0 0 0 0 0 0 128 ... 576" of 640 launches
// with the count of the sample before, which looked like memory kept from the start.
uint64_t launches_before(const ProcessTrace& trace, const MemoryEvent& a) {
  if (a.launches) return a.launches;
  auto after = std::lower_bound(trace.samples.begin(), trace.samples.end(), a.seq,
                                [](const MemorySample& s, uint64_t seq) { return s.seq < seq; });
  if (after == trace.samples.begin()) return 0;
  const MemorySample& before = *std::prev(after);
  if (after == trace.samples.end() || after->launches <= before.launches || after->time_ns <= before.time_ns ||
      a.time_ns <= before.time_ns)
    return before.launches;
  const long double share = static_cast<long double>(std::min(a.time_ns, after->time_ns) - before.time_ns) /
                            static_cast<long double>(after->time_ns - before.time_ns);
  return before.launches + static_cast<uint64_t>(share * static_cast<long double>(after->launches - before.launches));
}

using SiteKey = std::tuple<std::string, int, std::string, uint64_t, bool>;

// The memory held at the end, by the user's Python line (file, line, function): where the program
// asked for it. In a Python process, memory allocated with no Python stack (an autograd thread, or a
// caching allocator's segment for whichever line first needed one) is grouped by its native site.
std::map<SiteKey, Site> sites_of(const ProcessTrace& trace, const std::vector<MemoryEvent>& held,
                                 const Ownership& owners) {
  const bool python_process = !trace.python_stacks.empty();
  // A pool's blocks (CuPy's, PyTorch's, an NVTX heap's) are judged themselves: the pool's reserve
  // they were handed out of was taken for whichever line first needed more.
  // A pool's blocks and the CUDA allocations of the same line are different sites: what a
  // framework's allocator hands out is the program's tensors, what the line made CUDA allocate
  // besides (a library handle's workspace) is not.
  std::map<SiteKey, Site> sites;
  for (const MemoryEvent& a : held) {
    const Owner owner = owners.owner(a);
    if (owner.is_reserve() || (!owner.is_block() && !owns_memory(api_info(a.api).family))) continue;
    std::vector<report::Frame> python = python_frames(trace, a.python_stack_id);
    const size_t user = user_python_frame(python);
    if (user >= python.size() && !python_process) continue;
    // A block with neither stack (PyTorch's autograd threads make gradients with no Python frames):
    // nothing would say where it came from, and unrelated memory would be lumped together.
    if (user >= python.size() && a.stack_id == trace::kNoStack) continue;
    const bool block = owner.is_block();
    Site& site = user < python.size() ? sites[{python[user].file, python[user].line, python[user].function, 0, block}]
                                      : sites[{std::string(), 0, std::string(), a.stack_id, block}];
    if (site.allocations.empty()) {
      site.python = std::move(python);
      site.user = user;
    }
    site.allocations.push_back(&a);
    site.bytes += a.bytes;
  }

  return sites;
}

}  // namespace

GrowthObserver::GrowthObserver(const ProcessTrace& trace) : python_(!trace.python_stacks.empty()) {}

void GrowthObserver::saw_launches(uint64_t launches, uint64_t seq, uint64_t time_ns, bool allocation) {
  // The clock is published in batches (of 64 launches per thread): the last count is seen some
  // launches before the work ends, so its last allocation marks the end better than its first sight.
  const bool later = launches > launches_seen_ || (allocation && launches && launches == launches_seen_);
  if (!later) return;
  launches_seen_ = launches, end_of_work_seq_ = seq, end_of_work_ns_ = time_ns;
  gone_after_end_of_work_.clear();  // released before this later end
}

void GrowthObserver::on_live(const MemoryEvent& a) {
  if (!python_) return;
  saw_launches(a.launches, a.seq, a.time_ns, true);
  if (a.python_stack_id) {
    first_by_python_.try_emplace(a.python_stack_id, a);
  } else {
    first_by_native_.try_emplace(a.stack_id, a);
  }
}

void GrowthObserver::on_gone(const MemoryEvent& a) {
  if (python_ && launches_seen_ && a.seq <= end_of_work_seq_) gone_after_end_of_work_.push_back(a);
}

void GrowthObserver::on_sample(const MemorySample& s, const DeviceHoldings&, const LiveVisitor&) {
  if (python_) saw_launches(s.launches, s.seq, s.time_ns, false);
}

std::vector<MemoryEvent> GrowthObserver::held_at_end_of_work(
    const std::vector<LeakedAllocation>& at_exit, const std::function<bool(const MemoryEvent&)>& counts) const {
  // Live at exit, made before the end of the work or not: a framework's blocks come in with the seq
  // of the memory sample after their time (PyTorch's history, JAX's listings every 50 ms), later than
  // they were made; what a process makes after its work is rare and belongs to its own site.
  std::vector<MemoryEvent> held;
  for (const MemoryEvent& a : gone_after_end_of_work_) {
    if (counts(a)) held.push_back(a);
  }
  // A block whose pool ended with it (an NVTX heap reset after the work) is both gone and a leak.
  std::unordered_set<uint64_t> gone;
  for (const MemoryEvent& a : gone_after_end_of_work_) gone.insert(a.seq);
  for (const LeakedAllocation& leak : at_exit) {
    if (!gone.count(leak.allocation.seq)) held.push_back(leak.allocation);
  }
  return held;
}

const MemoryEvent& GrowthObserver::first_made(const MemoryEvent& a) const {
  const auto& firsts = a.python_stack_id ? first_by_python_ : first_by_native_;
  const auto it = firsts.find(a.python_stack_id ? a.python_stack_id : a.stack_id);
  return it == firsts.end() ? a : it->second;
}

std::vector<report::Finding> growth_findings(const ProcessTrace& trace, const std::vector<LeakedAllocation>& at_exit,
                                             StackResolver& stacks) {
  GrowthObserver observer(trace);
  RunBounds bounds;
  ObserverList both;
  both.add(&observer);
  both.add(&bounds);
  const ReplayResult replayed = replay(trace, &both);
  return growth_findings(trace, observer, bounds, at_exit, replayed.ownership, stacks);
}

namespace {

// The work's clock for one site: launches when the program launched anything after the site's
// first allocation, else time.
struct WorkClock {
  const ProcessTrace& trace;
  bool by_launches;
  uint64_t end;  // the work's
  uint64_t operator()(const MemoryEvent* a) const { return by_launches ? launches_before(trace, *a) : a->time_ns; }
};

// How many of a site's allocations (sorted by seq) came in the second half of the work, when what
// it holds grew over the work; nothing when it is steady state.
std::optional<uint64_t> late_growth(const Site& site, const WorkClock& clock, const GrowthObserver& observer) {
  const uint64_t first = clock(site.allocations.front());
  const uint64_t middle = first + (clock.end - first) / 2;
  const auto late = static_cast<uint64_t>(std::count_if(site.allocations.begin(), site.allocations.end(),
                                                        [&](const MemoryEvent* a) { return clock(a) > middle; }));
  if (late * 3 < site.allocations.size()) return std::nullopt;  // allocated early and reused: steady state
  // And in bytes: a big buffer made once early (a library's workspace) beside a few small late
  // ones is not memory that grows.
  uint64_t late_bytes = 0;
  for (const MemoryEvent* a : site.allocations) late_bytes += clock(a) > middle ? a->bytes : 0;
  if (late_bytes * 3 < site.bytes) return std::nullopt;
  // Memory that accumulates was allocated over a good part of the line's work; what a step makes
  // and the next one replaces (per-step tensors live when the work ended) was allocated within one
  // step. The line's work began with its first allocation, released or not.
  uint64_t start = first;
  for (const MemoryEvent* a : site.allocations) start = std::min(start, clock(&observer.first_made(*a)));
  if ((clock(site.allocations.back()) - first) * 4 < clock.end - start) return std::nullopt;
  // And made all along, not in two moments: a loop that keeps what it makes kept something in
  // most stretches of the work since its first; a correct one keeps a buffer cached in its first
  // step and the last step's tensors (a transformer's outputs and attention caches: the two ends).
  if (clock.end <= first) return std::nullopt;
  std::vector<bool> filled(kGrowthStretches, false);
  for (const MemoryEvent* a : site.allocations) {
    const uint64_t at = std::min(clock(a), clock.end) - first;
    filled[std::min<uint64_t>(kGrowthStretches - 1, at * kGrowthStretches / (clock.end - first))] = true;
  }
  if (static_cast<size_t>(std::count(filled.begin(), filled.end(), true)) < kMinGrowthStretches) return std::nullopt;
  return late;
}

report::Finding growth_finding(const ProcessTrace& trace, const Site& site, uint64_t late, bool by_launches,
                               StackResolver& stacks) {
  const MemoryEvent& sample = *site.allocations.back();
  const std::string api(api_info(stacks.api_called(sample.stack_id, sample.api)).name);
  report::Finding f;
  f.kind = report::FindingKind::Growth;
  f.severity = report::Severity::Error;
  f.api = api;
  f.bytes = site.bytes;
  f.count = site.allocations.size();
  f.pid = trace.pid;
  if (sample.device >= 0) f.device = sample.device;
  const bool from_python = site.user < site.python.size();
  f.headline = fmt::format(
      "Memory growth: {} in {} allocation(s) ({}), still held when the program's work ended, "
      "were allocated while it ran ({} of them in the second half of its {}), {}:",
      report::human_bytes(site.bytes), f.count, api, late, by_launches ? "kernel launches" : "time",
      from_python ? "from Python at" : "from");
  f.notes.push_back(
      "a healthy loop allocates what it keeps in its first steps and reuses it (a caching allocator "
      "holds it until exit either way); this site needed new memory until the end");
  if (!from_python) {
    f.message = fmt::format(
        "{} allocated at this site kept growing until the end of the program instead of being "
        "reused: something keeps what the program creates (a list of tensors, a cache)",
        report::human_bytes(site.bytes));
    f.notes.push_back(
        "made on threads without Python frames, or by a caching allocator for whichever line first "
        "needed a new segment; for the Python line, run with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every "
        "tensor is then an allocation of its own)");
    f.stack = stacks.user_stack(sample.stack_id);
    return f;
  }
  const report::Frame& line = site.python[site.user];
  f.message = fmt::format(
      "{} allocated from {}:{} kept growing until the end of the program instead of being "
      "reused: something keeps what this line creates (a list of tensors, a cache)",
      report::human_bytes(site.bytes), line.file, line.line);
  // The user's line first, then its callers: the library frames above it are in the Python stack.
  f.stack.assign(site.python.begin() + static_cast<std::ptrdiff_t>(site.user), site.python.end());
  f.related.push_back({report::RelatedRole::Python, "",
                       "Python stack of the last allocation:", python_frames(trace, sample.python_stack_id)});
  f.related.push_back({report::RelatedRole::Allocation, api, fmt::format("allocated by {} at:", api),
                       stacks.user_stack(sample.stack_id)});
  return f;
}

}  // namespace

std::vector<report::Finding> growth_findings(const ProcessTrace& trace, const GrowthObserver& observer,
                                             const RunBounds& bounds, const std::vector<LeakedAllocation>& at_exit,
                                             const Ownership& owners, StackResolver& stacks) {
  if (trace.python_stacks.empty()) return {};  // only a Python line says where growth comes from
  // By time, the work ends where the launches did, not with the process (an interpreter's shutdown).
  const uint64_t end_ns = observer.end_of_work_ns() ? observer.end_of_work_ns() : bounds.last_ns(trace);
  const uint64_t end_launches = std::max(observer.launches_seen(), bounds.max_allocation_launches());
  // Released after the work, at shutdown: the program's own objects going (a list of its module's),
  // when the program's own code asked for the memory. A library asked by a library (numba-cuda's test
  // suite, installed with it: every frame is the package's) may release at shutdown what it had
  // deferred (numba-cuda's pending frees): that is the library's business, as at exit.
  auto from_user_code = [&](const MemoryEvent& a) {
    if (!a.python_stack_id) return false;
    const std::vector<report::Frame> python = python_frames(trace, a.python_stack_id);
    return std::any_of(python.begin(), python.end(),
                       [](const report::Frame& frame) { return !is_library_python_file(frame.file); });
  };
  const std::vector<MemoryEvent> held = observer.held_at_end_of_work(at_exit, from_user_code);  // sites point into it
  auto sites = sites_of(trace, held, owners);
  std::vector<report::Finding> findings;
  for (auto& [key, site] : sites) {
    if (site.allocations.size() < kMinGrowthAllocations) continue;
    std::sort(site.allocations.begin(), site.allocations.end(),
              [](const MemoryEvent* a, const MemoryEvent* b) { return a->seq < b->seq; });
    // The launch clock moves in batches (trace::kLaunchCountBatch): it can cut the work into
    // kGrowthStretches only when the work spans that many batches; a shorter loop (numba-cuda's 40
    // steps of 200 launches read 0, 64 or 128) is judged by time.
    const bool by_launches =
        end_launches >= launches_before(trace, *site.allocations.front()) + trace::kLaunchCountBatch * kGrowthStretches;
    const WorkClock clock{trace, by_launches, by_launches ? end_launches : end_ns};
    if (const auto late = late_growth(site, clock, observer))
      findings.push_back(growth_finding(trace, site, *late, by_launches, stacks));
  }
  std::sort(findings.begin(), findings.end(),
            [](const report::Finding& a, const report::Finding& b) { return a.bytes > b.bytes; });
  return findings;
}

}  // namespace cuaudit
