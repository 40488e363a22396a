#include "oom_findings.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "ownership.h"
#include "pool_names.h"
#include "pool_picture.h"
#include "python_frames.h"
#include "replay.h"
#include "result_names.h"
#include "sampled_stacks.h"

namespace cuaudit {
namespace {

// cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY share the value 2.
constexpr int32_t kOutOfMemory = 2;
constexpr size_t kHolderSites = 3;

using Holder = OomObserver::Holder;
using Moment = OomObserver::Moment;

}  // namespace

void OomObserver::on_failed_allocation(const MemoryEvent& e, const DeviceHoldings& held, const LiveVisitor& live,
                                       const PoolsView& pools) {
  // The first failure of each site is described; the replay's live set is visited once per site.
  if (e.result != kOutOfMemory || moments_.count({e.stack_id, e.python_stack_id, e.api})) return;
  Moment m{e, held, {}, std::nullopt};
  for (uint32_t pool : pools.pools_on(e.device)) {
    const PoolUsage u = pools.usage(pool);
    // Measured holes only: a pool's own figures (XLA's) make its refusal's verdict instead.
    if (!u.segments || u.hole_bytes() < e.bytes || u.largest_free >= e.bytes) continue;
    if (!m.holey_pool || u.hole_bytes() > m.holey_pool->usage.hole_bytes()) m.holey_pool = HoleyPool{pool, u};
  }
  // A pool's blocks by their Python stack (the program's tensors and arrays, by the line that made
  // them), listed before the CUDA allocations by native stack (among them the pools' segments).
  // Each holder with the allocations it stands for (estimates in watch mode), rounded at the end.
  std::map<std::tuple<bool, uint64_t, Api>, std::pair<Holder, double>> sites;
  live([&](const MemoryEvent& a) {
    if (a.device != e.device || sampling_.unsampled(a.stack_id)) return;
    const bool block = is_block_op(a.api) && a.python_stack_id;  // a pool's block, by its operation
    if (!block && !owns_memory(api_info(a.api).family)) return;
    auto& [h, count] = sites[{!block, block ? a.python_stack_id : a.stack_id, a.api}];
    h.stack_id = a.stack_id, h.api = a.api;
    if (block) h.python_stack_id = a.python_stack_id;
    h.bytes += sampling_.estimated_bytes(a.bytes);
    count += sampling_.weight(a.bytes);
    h.first_ns = std::min(h.first_ns, a.time_ns), h.last_ns = std::max(h.last_ns, a.time_ns);
  });
  for (auto& [key, site] : sites) {
    site.first.count = static_cast<uint64_t>(std::llround(site.second));
    m.holders.push_back(site.first);
  }
  std::stable_sort(m.holders.begin(), m.holders.end(), [](const Holder& a, const Holder& b) {
    if ((a.python_stack_id != 0) != (b.python_stack_id != 0)) return a.python_stack_id != 0;
    return a.bytes > b.bytes;
  });
  moments_.emplace(MomentKey{e.stack_id, e.python_stack_id, e.api}, std::move(m));
}

namespace {

// The sample taken right after the failure on its device (the injection takes one), else the
// last one before it.
const MemorySample* sample_at(const ProcessTrace& trace, const MemoryEvent& e) {
  const MemorySample* before = nullptr;
  for (const MemorySample& s : trace.samples) {
    if (s.device != e.device) continue;
    if (s.seq > e.seq) return before && s.time_ns - e.time_ns > 50'000'000 ? before : &s;
    before = &s;
  }
  return before;
}

const DeviceState* state_at(const ProcessTrace& trace, const MemoryEvent& e) {
  for (const DeviceState& d : trace.device_states) {
    if (d.seq > e.seq && d.device == e.device && d.at_failed_allocation) return &d;
  }
  return nullptr;
}

// What the refusing framework said of its refusal `e` (its allocator's statistics), if it said so.
const FrameworkOom* framework_oom(const ProcessTrace& trace, const MemoryEvent& e) {
  for (const FrameworkOom& said : trace.framework_ooms) {
    if (said.pool == e.pool && said.time_ns == e.time_ns && said.requested == e.bytes) return &said;
  }
  return nullptr;
}

uint64_t resident_bytes(const DeviceHoldings& held) {
  uint64_t bytes = 0;
  for (MemoryFamily f : {MemoryFamily::Device, MemoryFamily::StreamOrdered, MemoryFamily::Array,
                         MemoryFamily::MipmappedArray, MemoryFamily::VmmPhysical, MemoryFamily::GraphMemory})
    bytes += held.by_family[static_cast<size_t>(f)];
  return bytes;
}

std::vector<std::pair<std::string, uint64_t>> families_of(const DeviceHoldings& held) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (size_t f = 0; f < kMemoryFamilies; ++f) {
    if (held.by_family[f]) out.emplace_back(family_key(static_cast<MemoryFamily>(f)), held.by_family[f]);
  }
  return out;
}

// The user's Python line of a Python stack ("" when none): the injection's stacks and a
// framework's history number their stacks apart, so lines are compared, not ids.
std::string user_line(const ProcessTrace& trace, uint64_t python_stack_id) {
  if (!python_stack_id) return {};
  const std::vector<report::Frame> frames = python_frames(trace, python_stack_id);
  const size_t user = user_python_frame(frames);
  return user < frames.size() ? fmt::format("{}:{}", frames[user].file, frames[user].line) : std::string();
}

// The biggest holders then, as related entries: a pool's blocks by the user's Python line that
// made them (several Python stacks can end at one line), then CUDA allocations by native stack.
void add_holders(const ProcessTrace& trace, const std::vector<Holder>& holders, StackResolver& stacks,
                 report::Finding& f) {
  std::vector<Holder> lines;  // one per user line, in the holders' order
  std::vector<std::string> line_of;
  for (const Holder& h : holders) {
    const std::string line = h.python_stack_id ? user_line(trace, h.python_stack_id) : std::string();
    auto same = std::find(line_of.begin(), line_of.end(), line);
    if (line.empty() || same == line_of.end()) {
      lines.push_back(h);
      line_of.push_back(line.empty() ? fmt::format("#{}", lines.size()) : line);
      continue;
    }
    Holder& into = lines[static_cast<size_t>(same - line_of.begin())];
    into.bytes += h.bytes, into.count += h.count;
    into.first_ns = std::min(into.first_ns, h.first_ns), into.last_ns = std::max(into.last_ns, h.last_ns);
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Holder& a, const Holder& b) {
    if ((a.python_stack_id != 0) != (b.python_stack_id != 0)) return a.python_stack_id != 0;
    return a.bytes > b.bytes;
  });
  if (lines.size() > kHolderSites) lines.resize(kHolderSites);
  for (const Holder& h : lines) {
    const std::string holder_api(api_info(stacks.api_called(h.stack_id, h.api)).name);
    const double first = trace.seconds_since_start(h.first_ns), last = trace.seconds_since_start(h.last_ns);
    const std::string when = h.count > 1 ? fmt::format("made between {:.3f} s and {:.3f} s", first, last)
                                         : fmt::format("made at {:.3f} s", first);
    if (h.python_stack_id) {
      std::vector<report::Frame> python = python_frames(trace, h.python_stack_id);
      const size_t user = user_python_frame(python);
      if (user < python.size()) python.erase(python.begin(), python.begin() + static_cast<std::ptrdiff_t>(user));
      f.related.push_back({report::RelatedRole::Holder, holder_api,
                           fmt::format("held {} in {} block(s) ({}) {}, from Python at:", report::human_bytes(h.bytes),
                                       h.count, holder_api, when),
                           python});
      continue;
    }
    f.related.push_back({report::RelatedRole::Holder, holder_api,
                         fmt::format("held {} in {} allocation(s) {}, by {} at:", report::human_bytes(h.bytes), h.count,
                                     when, holder_api),
                         stacks.user_stack(h.stack_id)});
  }
}

// What the failure's moment says (the device, the program, the pools, the refusing allocator) and
// the verdict made of it.
struct Judged {
  report::OutOfMemoryState o;
  OomFacts facts;
  std::optional<uint64_t> free;  // what the verdict believed free on the device
};

Judged judge(const ProcessTrace& trace, const Moment& m) {
  const MemoryEvent& e = m.failure;
  const MemorySample* sample = e.device >= 0 ? sample_at(trace, e) : nullptr;
  const DeviceState* state = e.device >= 0 ? state_at(trace, e) : nullptr;
  report::OutOfMemoryState o;
  o.requested = e.bytes;
  if (sample) o.device_total = sample->total_bytes, o.device_free = sample->free_bytes;
  o.program_held = m.held.total;
  o.families = families_of(m.held);
  if (state && state->pool_reserved) o.pool_reserved = state->pool_reserved, o.pool_used = state->pool_used;
  if (state) o.other_processes = state->other_processes_bytes;
  OomFacts facts{o.requested, o.device_total, o.device_free, o.program_held, o.other_processes, resident_bytes(m.held)};
  if (is_block_op(e.api)) {
    facts.refused_by = pool_description(trace.pools, e.pool);
    if (const FrameworkOom* said = framework_oom(trace, e); said && said->limit) {
      facts.allocator_limit = said->limit, facts.allocator_in_use = said->in_use;
      facts.allocator_largest_free = said->largest_free;
      o.allocator_limit = said->limit, o.allocator_in_use = said->in_use, o.allocator_largest_free = said->largest_free;
    }
  }
  if (m.holey_pool) {
    facts.holey_pool = pool_description(trace.pools, m.holey_pool->pool);
    facts.pool_holes = m.holey_pool->usage.hole_bytes();
    facts.pool_largest_free = m.holey_pool->usage.largest_free;
  }
  o.verdict = oom_verdict(facts);
  return {o, facts, believable_free(facts)};
}

// The notes that explain the verdict: the device's count, the pool's holes and what to do about
// them, the stream-ordered pool, other processes, how the program handled it, the allocator's word.
void add_moment_notes(const ProcessTrace& trace, const Moment& m, const Judged& j, ErrorHandling handling,
                      report::Finding& f) {
  const MemoryEvent& e = m.failure;
  const report::OutOfMemoryState& o = j.o;
  const OomFacts& facts = j.facts;
  const DeviceState* state = e.device >= 0 ? state_at(trace, e) : nullptr;
  if (o.device_total) {
    f.notes.push_back(fmt::format("device {} at {:.3f} s: {} in all, {} free; the program held {}", e.device, *f.at,
                                  report::human_bytes(*o.device_total), report::human_bytes(*o.device_free),
                                  report::human_bytes(o.program_held)));
    if (j.free != o.device_free) {
      f.notes.push_back(
          fmt::format("that free count contradicts what the program held on the device ({}): the "
                      "verdict takes at most {} as free",
                      report::human_bytes(facts.resident_held), report::human_bytes(j.free.value_or(0))));
    }
  }
  if (m.holey_pool) {
    const PoolUsage& u = m.holey_pool->usage;
    f.notes.push_back(fmt::format(
        "{} had reserved {} in {} segment(s) and handed out {}: {} free in holes, the "
        "largest {} (fragmentation {:.0f}%)",
        facts.holey_pool, report::human_bytes(u.reserved), u.segments, report::human_bytes(u.used),
        report::human_bytes(u.hole_bytes()), report::human_bytes(u.largest_free), u.hole_fragmentation() * 100));
    f.notes.push_back(pool_reserve_owner(trace.pools, m.holey_pool->pool).framework()
                          ? "releasing the cache (torch.cuda.empty_cache(), free_all_blocks()) will not help: the "
                            "holes sit in segments that still hold live blocks; for PyTorch, "
                            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets a segment grow instead"
                          : "keep block sizes uniform, or give long-lived blocks a pool of their own, so that they "
                            "do not pin holes among short-lived ones (docs/FRAGMENTATION.md)");
  }
  if (o.pool_reserved && *o.pool_reserved) {  // only a pool the program used says something
    f.notes.push_back(fmt::format("its stream-ordered pool had reserved {} and used {} ({} reserved but unused)",
                                  report::human_bytes(*o.pool_reserved), report::human_bytes(*o.pool_used),
                                  report::human_bytes(*o.pool_reserved - std::min(*o.pool_reserved, *o.pool_used))));
  }
  if (e.device >= 0 && (state || !is_block_op(e.api))) {  // a framework's refusal asked nobody
    f.notes.push_back(
        o.other_processes
            ? fmt::format("other processes held {} of the device (NVML)", report::human_bytes(*o.other_processes))
            : std::string("other processes' memory on the device is unknown (NVML not available "
                          "or not permitted)"));
  }
  f.notes.push_back(handling == ErrorHandling::Unchecked
                        ? "the program never looked at the failure: the pointer it got is not memory"
                        : "the program handled the failure");
  if (o.allocator_limit) {
    f.notes.push_back(fmt::format("{} said: {} of the {} it may hold in use, its largest free block {}",
                                  facts.refused_by, report::human_bytes(*o.allocator_in_use),
                                  report::human_bytes(*o.allocator_limit),
                                  report::human_bytes(*o.allocator_largest_free)));
  }
  if (const auto pool = trace.pools.find(e.pool);
      is_block_op(e.api) && pool != trace.pools.end() && pool->second.kind == MemorySource::XlaBfc) {
    f.notes.push_back(
        "JAX dispatches work asynchronously: XLA's error reaches the program where it waits for "
        "the result (block_until_ready, printing it, converting it to NumPy), which can be after "
        "the line that asked");
  }
}

report::Finding describe(const ProcessTrace& trace, const Moment& m, const std::string& api, ErrorHandling handling,
                         uint64_t count, StackResolver& stacks) {
  const MemoryEvent& e = m.failure;
  const Judged j = judge(trace, m);
  const report::OutOfMemoryState& o = j.o;
  report::Finding f;
  f.kind = report::FindingKind::OutOfMemory;
  f.severity = handling == ErrorHandling::Unchecked ? report::Severity::Error : report::Severity::Warning;
  f.api = api;
  f.bytes = e.bytes;
  f.count = count;
  f.pid = trace.pid;
  if (e.device >= 0) f.device = e.device;
  // A framework's refusal returned nothing CUDA could name: its error is the framework's.
  if (!is_block_op(e.api)) f.result = result_name(e.api, e.result);
  f.at = trace.seconds_since_start(e.time_ns);
  const std::string times = count > 1 ? fmt::format(" ({} times)", count) : std::string();
  f.headline =
      fmt::format("Out of memory: {} of {} failed{}: {}; at:", api, report::human_bytes(e.bytes), times, o.verdict);
  f.message = fmt::format("{} could not allocate {}: {}", api, report::human_bytes(e.bytes), o.verdict);
  // A Python program's failure is at its Python line; the framework's own call is related.
  f.stack = block_stack(trace, e.stack_id, e.python_stack_id, stacks);
  if (e.python_stack_id && !f.stack.empty() && f.stack.front().module == "python") {
    f.related.push_back({report::RelatedRole::Allocation, api, fmt::format("the failing {} inside the framework:", api),
                         stacks.user_stack(e.stack_id)});
  }
  f.out_of_memory = o;
  add_moment_notes(trace, m, j, handling, f);
  add_holders(trace, m.holders, stacks, f);
  if (trace.stack_sampling.on() && !m.holders.empty())
    f.notes.push_back("the holders' figures are " + sampled_site_note(trace.stack_sampling));
  return f;
}

}  // namespace

std::optional<uint64_t> believable_free(const OomFacts& x) {
  if (!x.total || !x.free || x.resident_held > *x.total) return x.free;
  return std::min(*x.free, *x.total - x.resident_held);
}

namespace {

// A framework allocator that refused a request and said why in its own figures (XLA's).
std::string allocator_verdict(const OomFacts& x) {
  const uint64_t free = x.allocator_limit - std::min(x.allocator_limit, x.allocator_in_use);
  if (x.requested > x.allocator_limit) {
    return fmt::format(
        "{} refused it: the request alone is larger than all it may hold ({}; for JAX, "
        "XLA_PYTHON_CLIENT_MEM_FRACTION sets that share of the device)",
        x.refused_by, report::human_bytes(x.allocator_limit));
  }
  if (free >= x.requested) {
    return fmt::format(
        "free memory was enough in total inside {} ({} free) but its largest free block was {}: "
        "fragmentation inside the allocator",
        x.refused_by, report::human_bytes(free), report::human_bytes(x.allocator_largest_free));
  }
  return fmt::format("the program's arrays filled {} ({} of the {} it may hold in use)", x.refused_by,
                     report::human_bytes(x.allocator_in_use), report::human_bytes(x.allocator_limit));
}

}  // namespace

std::string oom_verdict(const OomFacts& x) {
  if (!x.total) return "the host could not provide that much page-locked memory";
  if (x.requested > *x.total) {
    return fmt::format("the request was larger than the device ({} in all)", report::human_bytes(*x.total));
  }
  if (x.other_processes && *x.other_processes > x.program_held && *x.other_processes >= *x.total / 10) {
    return fmt::format("another process holds {} of the device", report::human_bytes(*x.other_processes));
  }
  if (!x.holey_pool.empty()) {
    return fmt::format(
        "free memory was enough in total inside {} ({} in holes) but no hole was as large as the "
        "request (the largest {}): fragmentation, measured in the pool",
        x.holey_pool, report::human_bytes(x.pool_holes), report::human_bytes(x.pool_largest_free));
  }
  if (!x.refused_by.empty() && x.allocator_limit) return allocator_verdict(x);
  if (!x.refused_by.empty()) {
    return fmt::format(
        "{} refused it itself, no CUDA call failed: a cap on its memory was reached "
        "(torch.cuda.set_per_process_memory_fraction, or its allocator's settings)",
        x.refused_by);
  }
  const std::optional<uint64_t> free = believable_free(x);
  if (free && *free >= x.requested) {
    return fmt::format(
        "the device reported enough free memory ({}) and still could not provide it: how the "
        "driver lays out the device's memory is not visible to cuaudit",
        report::human_bytes(*free));
  }
  const uint64_t used = free ? *x.total - std::min(*x.total, *free) : 0;
  if (x.program_held * 2 >= used) return "the program's own allocations filled the device";
  return "memory the program did not allocate through CUDA's allocation calls filled the device (contexts, "
         "libraries, other processes)";
}

std::vector<report::Finding> oom_findings(const ProcessTrace& trace, StackResolver& stacks, FailureJudge& failures,
                                          std::set<uint64_t>& explained) {
  OomObserver observer(trace.stack_sampling);
  replay(trace, &observer);
  return oom_findings(trace, observer, stacks, failures, explained);
}

namespace {

// A framework's allocator that fails a request releases what it cached and tries again (PyTorch's
// does): the same request from the same Python line on the same device, right after, from another
// place in the allocator than its first attempt, is a retry of one failure. A program's own loop
// that asks again comes back through the same native stack: each of its failures counts.
constexpr uint64_t kRetryNs = 1'000'000'000;

bool is_retry(const MemoryEvent& e, const MemoryEvent* last, const MemoryEvent* first_attempt) {
  if (!last || !e.python_stack_id || e.python_stack_id != last->python_stack_id) return false;
  if (e.bytes != last->bytes || e.device != last->device || e.time_ns - last->time_ns > kRetryNs) return false;
  return e.stack_id != first_attempt->stack_id;
}

}  // namespace

std::vector<report::Finding> oom_findings(const ProcessTrace& trace, const OomObserver& observer, StackResolver& stacks,
                                          FailureJudge& failures, std::set<uint64_t>& explained) {
  // One finding per (site, API, handling), at its first failure, counting the rest; a Python
  // program's site is its Python line.
  struct Group {
    const Moment* moment;
    const Event* first;
    uint64_t count = 0, retries = 0;
    std::string raised_by;  // the framework that raised its error for this failure
  };
  using Key = std::tuple<bool, uint64_t, std::string, int>;
  std::map<Key, Group> groups;
  std::vector<Key> order;
  const auto add = [&](const Event& e, const std::string& api) -> Key {
    const MemoryEvent& m = e.memory();
    const ErrorHandling handling = failures.handling(e, api);
    const Key key{m.python_stack_id != 0, m.python_stack_id ? m.python_stack_id : e.stack_id, api,
                  static_cast<int>(handling)};
    auto [it, inserted] =
        groups.try_emplace(key, Group{&observer.moments().at({e.stack_id, m.python_stack_id, m.api}), &e});
    if (inserted) order.push_back(key);
    ++it->second.count;
    return key;
  };
  const MemoryEvent* last = nullptr;
  const MemoryEvent* first_attempt = nullptr;
  Key last_key;
  std::vector<std::pair<const MemoryEvent*, Key>> cuda_failures;
  std::vector<const Event*> refusals;  // a framework's own out-of-memory errors
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::Alloc || e.memory().result != kOutOfMemory) continue;
    const MemoryEvent& m = e.memory();
    explained.insert(e.seq);
    if (is_block_op(m.api)) {
      refusals.push_back(&e);
      continue;
    }
    if (is_retry(m, last, first_attempt)) {
      ++groups.at(last_key).retries;
      last = &m;
      continue;
    }
    last_key = add(e, std::string(api_info(stacks.api_called(e.stack_id, m.api)).name));
    last = first_attempt = &m;
    cuda_failures.emplace_back(&m, last_key);
  }
  // A framework's error raised for a request whose cudaMalloc failed (within a second, on the
  // same device, from the same Python line) is that failure, said once; one without a failing
  // CUDA call is the framework's own refusal, a finding of its own.
  for (const Event* e : refusals) {
    const MemoryEvent& m = e->memory();
    const auto same = std::find_if(cuda_failures.begin(), cuda_failures.end(), [&](const auto& failure) {
      const MemoryEvent& c = *failure.first;
      const uint64_t apart = c.time_ns > m.time_ns ? c.time_ns - m.time_ns : m.time_ns - c.time_ns;
      if (apart > kRetryNs || c.device != m.device) return false;
      const std::string line = user_line(trace, m.python_stack_id);
      return line.empty() || line == user_line(trace, c.python_stack_id);
    });
    if (same != cuda_failures.end()) {
      groups.at(same->second).raised_by = pool_description(trace.pools, m.pool);
    } else {
      add(*e, std::string(api_info(m.api).name));
    }
  }
  std::vector<report::Finding> findings;
  for (const auto& key : order) {
    const Group& g = groups.at(key);
    report::Finding f =
        describe(trace, *g.moment, std::get<2>(key), static_cast<ErrorHandling>(std::get<3>(key)), g.count, stacks);
    if (!g.raised_by.empty()) f.notes.push_back(fmt::format("{} raised its out-of-memory error for it", g.raised_by));
    if (g.retries) {
      f.notes.push_back(
          fmt::format("the allocator tried again right after (it releases what it cached first): {} "
                      "retry(ies) failed as well, counted with their request",
                      g.retries));
    }
    if (std::string use = garbage_pointer_use(trace, *g.first, stacks); !use.empty()) f.notes.push_back(std::move(use));
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace cuaudit
