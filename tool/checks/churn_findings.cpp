#include "churn_findings.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "replay.h"
#include "run_bounds.h"
#include "sampled_stacks.h"

namespace cuaudit {
namespace {

// Lifetimes kept per site for the median: when full, every other one is dropped and only every
// second one after is kept (a deterministic thinning), so memory stays bounded: 512 bytes a site, in a
// run that may have a hundred thousand sites.
constexpr size_t kMaxLifetimes = 64;

using Site = ChurnCounter::Site;

}  // namespace

void ChurnCounter::on_released(const MemoryEvent& a, const MemoryEvent& r) {
  // Graph memory comes and goes at every launch by design (no allocator call), handles are not
  // memory, and a pool's blocks come out of memory the pool keeps (the pool is what cures churn):
  // none of them is churn.
  const MemoryFamily family = api_info(a.api).family;
  if (family == MemoryFamily::GraphMemory || is_resource(family) || is_block_op(a.api)) return;
  Site& s = site_lookup_(sites_, {a.stack_id, a.api});
  s.stack_id = a.stack_id, s.api = a.api, s.release_api = r.api, s.device = a.device;
  ++s.pairs;
  s.bytes += a.bytes;
  s.call_ns += a.call_ns + r.call_ns;
  if (s.pairs % s.stride == 0) {
    s.lifetimes.push_back(r.time_ns > a.time_ns ? r.time_ns - a.time_ns : 0);
    if (s.lifetimes.size() == kMaxLifetimes) {
      for (size_t i = 0; i < kMaxLifetimes / 2; ++i) s.lifetimes[i] = s.lifetimes[2 * i + 1];
      s.lifetimes.resize(kMaxLifetimes / 2);
      s.stride *= 2;
    }
  }
}

std::vector<const ChurnCounter::Site*> ChurnCounter::sites() const {
  std::vector<const Site*> out;
  for (const auto& [key, site] : sites_) out.push_back(&site);
  std::sort(out.begin(), out.end(),
            [](const Site* a, const Site* b) { return std::tie(a->stack_id, a->api) < std::tie(b->stack_id, b->api); });
  return out;
}

namespace {

uint64_t median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string human_ns(uint64_t ns) {
  if (ns >= 1'000'000'000) return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
  if (ns >= 1'000'000) return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
  if (ns >= 1'000) return fmt::format("{:.0f} us", static_cast<double>(ns) / 1e3);
  return fmt::format("{} ns", ns);
}

const char* advice(MemoryFamily family) {
  switch (family) {
    case MemoryFamily::Device:
    case MemoryFamily::Managed:
      return "allocate once outside the loop and reuse the buffer, or use cudaMallocAsync with a memory pool "
             "(stream-ordered allocation reuses memory without synchronizing the device)";
    case MemoryFamily::PinnedHost:
    case MemoryFamily::RegisteredHost:
      return "page-locking is expensive: allocate the pinned buffers once and reuse them";
    case MemoryFamily::StreamOrdered:
      return "the pool already reuses the memory; if the calls still cost too much, allocate once outside the loop";
    default:
      return "allocate once outside the loop and reuse it";
  }
}

}  // namespace

std::vector<report::Finding> churn_findings(const ProcessTrace& trace, StackResolver& stacks,
                                            const ChurnOptions& options) {
  ObserverList both;
  ChurnCounter counter;
  RunBounds bounds;
  both.add(&counter);
  both.add(&bounds);
  replay(trace, &both);
  return churn_findings(trace, counter, bounds.run_ns(trace), stacks, options);
}

std::vector<report::Finding> churn_findings(const ProcessTrace& trace, const ChurnCounter& counter, uint64_t run,
                                            StackResolver& stacks, const ChurnOptions& options) {
  // Watch mode: a site's pairs are its sampled ones, each standing for 1/p of its size's (the pairs of
  // allocations without a sampled stack are in those estimates, not at a site of their own).
  const StackSampling& sampling = trace.stack_sampling;
  std::vector<Site> churning;
  for (const Site* seen : counter.sites()) {
    if (sampling.unsampled(seen->stack_id)) continue;
    Site s = *seen;
    const double scale = sampling.weight(s.bytes / s.pairs);
    s.pairs = static_cast<uint64_t>(std::llround(static_cast<double>(s.pairs) * scale));
    s.bytes = static_cast<uint64_t>(std::llround(static_cast<double>(s.bytes) * scale));
    s.call_ns = static_cast<uint64_t>(std::llround(static_cast<double>(s.call_ns) * scale));
    const double per_second = run ? static_cast<double>(s.pairs) * 1e9 / static_cast<double>(run) : 0;
    if (s.pairs >= options.min_pairs && per_second >= options.min_pairs_per_second) churning.push_back(std::move(s));
  }
  std::sort(churning.begin(), churning.end(),
            [](const Site& a, const Site& b) { return std::tie(a.call_ns, a.pairs) > std::tie(b.call_ns, b.pairs); });
  std::vector<report::Finding> findings;
  for (const Site& site : churning) {
    const Site* s = &site;
    const std::string api(api_info(stacks.api_called(s->stack_id, s->api)).name);
    const std::string release(api_info(s->release_api).name);
    report::ChurnStats c{s->pairs, median(s->lifetimes), s->call_ns,
                         run ? static_cast<double>(s->call_ns) / static_cast<double>(run) : 0.0};
    const double percent = 100.0 * c.run_share;
    report::Finding f;
    f.kind = report::FindingKind::AllocationChurn;
    f.severity =
        options.warn_percent && percent >= *options.warn_percent ? report::Severity::Warning : report::Severity::Info;
    f.api = api;
    f.bytes = s->bytes / s->pairs;  // the typical (mean) allocation
    f.count = s->pairs;
    f.pid = trace.pid;
    if (s->device >= 0) f.device = s->device;
    const std::string time = s->call_ns
                                 ? fmt::format(", {} in the calls = {:.1f}% of the run", human_ns(s->call_ns), percent)
                                 : std::string();
    f.headline = fmt::format("Allocation churn: {} {}/{} pairs of {}, lifetime {}{}, at:", s->pairs, api, release,
                             report::human_bytes(f.bytes), human_ns(c.median_lifetime_ns), time);
    f.message = fmt::format(
        "{} allocations of {} at this site were released again during the run (median lifetime "
        "{}){}: {}",
        s->pairs, report::human_bytes(f.bytes), human_ns(c.median_lifetime_ns), time, advice(api_info(s->api).family));
    f.notes.push_back(advice(api_info(s->api).family));
    if (sampling.on()) f.notes.push_back(sampled_site_note(sampling));
    f.stack = stacks.user_stack(s->stack_id);
    f.churn = c;
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace cuaudit
