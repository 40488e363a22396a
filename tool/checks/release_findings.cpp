#include "release_findings.h"

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "ownership.h"
#include "pool_names.h"
#include "result_names.h"

namespace cuaudit {
namespace {

report::FindingKind kind_of(ReleaseProblem p) {
  switch (p) {
    case ReleaseProblem::Mismatched:
      return report::FindingKind::MismatchedFree;
    case ReleaseProblem::Double:
      return report::FindingKind::DoubleFree;
    case ReleaseProblem::Invalid:
      return report::FindingKind::InvalidFree;
  }
  return report::FindingKind::InvalidFree;
}

bool is_libc(const MemoryEvent& e) { return api_info(e.api).family == MemoryFamily::HostHeap; }

// Whether the release returned something to say: libc calls are recorded before they run, and a
// pool's return of a block (an NVTX annotation, a framework's free) returns nothing.
bool has_result(const MemoryEvent& release) { return !is_libc(release) && !is_block_op(release.api); }

// " (returned cudaErrorInvalidValue)"
std::string returned(const MemoryEvent& release) {
  return has_result(release) ? fmt::format(" (returned {})", result_name(release.api, release.result)) : std::string();
}

std::string memory_of(const MemoryEvent& allocation, const std::map<uint32_t, PoolInfo>& pools) {
  if (owner_of_event(allocation, pools).is_block()) {
    return fmt::format("a block of {} from {}", pool_description(pools, allocation.pool),
                       api_info(allocation.api).name);
  }
  return fmt::format("{} from {}", family_description(api_info(allocation.api).family), api_info(allocation.api).name);
}

struct Group {
  const ReleaseFinding* first;
  Api allocation_api;
  uint64_t count = 0;
  uint64_t bytes = 0;
};

report::Finding describe(const Group& g, const ProcessTrace& trace, StackResolver& stacks) {
  const ReleaseFinding& p = *g.first;
  const std::string_view release = api_info(p.release.api).name;
  report::Finding f;
  f.kind = kind_of(p.problem);
  f.severity = report::Severity::Error;
  f.api = std::string(release);
  f.count = g.count;
  f.bytes = g.bytes;
  f.pid = trace.pid;
  f.address = p.release.key;
  if (has_result(p.release)) f.result = result_name(p.release.api, p.release.result);
  if (p.release.device >= 0) f.device = p.release.device;
  f.stack = stacks.user_stack(p.release.stack_id);

  const std::string times = g.count > 1 ? fmt::format(" ({} times)", g.count) : std::string();
  switch (p.problem) {
    case ReleaseProblem::Mismatched: {
      const std::string memory = fmt::format("{} from {}", family_description(api_info(g.allocation_api).family),
                                             api_info(g.allocation_api).name);
      f.headline =
          fmt::format("Mismatched free: {} released with {}{}{} at:", memory, release, returned(p.release), times);
      f.message =
          fmt::format("{} released with {}; release it with {}", memory, release, right_release_for(g.allocation_api));
      if (is_libc(p.release)) {
        f.notes.push_back(
            fmt::format("{} does not release CUDA memory; the C library usually kills the process right after (abort "
                        "or segmentation fault)",
                        release));
      }
      break;
    }
    case ReleaseProblem::Double:
      f.headline = fmt::format("Double free: {} released again with {}{}{} at:", memory_of(*p.allocation, trace.pools),
                               release, returned(p.release), times);
      f.message = fmt::format("{} was released twice: again with {} after {} had released it",
                              memory_of(*p.allocation, trace.pools), release, api_info(p.first_release->api).name);
      break;
    case ReleaseProblem::Invalid:
      if (p.allocation) {
        f.headline = fmt::format(
            "Invalid free: {} of 0x{:x}, {} byte(s) inside a {}-byte allocation of {}{}{} at:", release, p.release.key,
            p.offset, p.allocation->bytes, memory_of(*p.allocation, trace.pools), returned(p.release), times);
        f.message =
            fmt::format("{} was given a pointer {} byte(s) inside an allocation, not its start", release, p.offset);
      } else {
        // A pool's block: no CUDA allocator is involved, the pool is the one that never handed it out.
        const char* origin = owner_of_event(p.release, trace.pools).is_block() ? "the pool never handed out as a block"
                                                                               : "no CUDA allocator returned";
        f.headline = fmt::format("Invalid free: {} of 0x{:x}, which {}{}{} at:", release, p.release.key, origin,
                                 returned(p.release), times);
        f.message = fmt::format("{} was given 0x{:x}, which {}", release, p.release.key, origin);
      }
      break;
  }
  if (p.first_release) {
    f.related.push_back({report::RelatedRole::FirstRelease, std::string(api_info(p.first_release->api).name),
                         fmt::format("first released by {} at:", api_info(p.first_release->api).name),
                         stacks.user_stack(p.first_release->stack_id)});
  }
  if (p.allocation) {
    f.related.push_back({report::RelatedRole::Allocation, std::string(api_info(g.allocation_api).name),
                         fmt::format("allocated by {} at:", api_info(g.allocation_api).name),
                         stacks.user_stack(p.allocation->stack_id)});
  }
  return f;
}

}  // namespace

std::string_view right_release_for(Api allocation) {
  MemoryFamily family = api_info(allocation).family;
  if (is_block_op(allocation)) return take_back_name(api_info(allocation).source);  // each pool has its own way back
  // cudaFree / cuMemFree: managed memory, imported pool pointers and external buffers.
  if (family == MemoryFamily::Managed || family == MemoryFamily::ImportedPool || family == MemoryFamily::ExternalBuffer)
    family = MemoryFamily::Device;
  if (family == MemoryFamily::GraphMemory) family = MemoryFamily::StreamOrdered;  // cudaFreeAsync / cuMemFreeAsync
  const ApiLayer layer = api_layer(api_info(allocation).name);
  for (const ApiInfo& candidate : kApiInfo) {
    if (candidate.role == ApiRole::Free && candidate.family == family && api_layer(candidate.name) == layer) {
      return candidate.name;
    }
  }
  return "the matching release API";
}

std::vector<report::Finding> release_findings(const std::vector<ReleaseFinding>& problems, const ProcessTrace& trace,
                                              StackResolver& stacks) {
  // Same problem, same release site, same allocation site: one finding with a count.
  std::map<std::tuple<uint8_t, uint16_t, uint64_t, uint16_t, uint64_t, uint64_t>, Group> groups;
  std::vector<decltype(groups)::key_type> order;
  for (const ReleaseFinding& p : problems) {
    const Api allocation_api = p.allocation ? stacks.api_called(p.allocation->stack_id, p.allocation->api) : Api::Count;
    const auto key =
        std::make_tuple(static_cast<uint8_t>(p.problem), static_cast<uint16_t>(p.release.api), p.release.stack_id,
                        static_cast<uint16_t>(allocation_api), p.allocation ? p.allocation->stack_id : 0,
                        p.first_release ? p.first_release->stack_id : 0);
    auto [it, inserted] = groups.try_emplace(key, Group{&p, allocation_api});
    if (inserted) order.push_back(key);
    ++it->second.count;
    if (p.allocation) it->second.bytes += p.allocation->bytes;
  }
  std::vector<report::Finding> findings;
  for (const auto& key : order) findings.push_back(describe(groups.at(key), trace, stacks));
  return findings;
}

}  // namespace cuaudit
