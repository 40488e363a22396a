// The replay's table of CUDA's own allocations (every family but pools' blocks, which PoolHeaps
// keeps): what is live in each key space, what was released there (for double and invalid frees
// and stale launch arguments), what each device holds, and the findings of releases as they come.
// Who owns what it holds is memory_owners.h's to say.
// Internal to the replay (replay.cpp); a header of its own so that the replay's loop reads alone.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <map>
#include <unordered_map>

#include "memory_ranges.h"
#include "released_memory.h"
#include "replay.h"

namespace cuaudit::replay_detail {

// cudaErrorCudartUnloading and CUDA_ERROR_DEINITIALIZED share the value 4: the call came after
// CUDA began tearing itself down at exit, and CUDA checked nothing.
inline constexpr int32_t kShutdownResult = 4;

inline constexpr size_t kSpaces = kKeySpaces;

// Memory bound to a context dies with it. Pool (stream-ordered, graph, imported) and VMM memory
// belong to the device and the process, not to one context, so a context reset does not release them.
inline bool dies_with_context(MemoryFamily f) {
  return f != MemoryFamily::StreamOrdered && f != MemoryFamily::VmmPhysical && f != MemoryFamily::VmmReservation &&
         f != MemoryFamily::VmmMapping && f != MemoryFamily::GraphMemory && f != MemoryFamily::ImportedPool;
}

inline MemoryFamily family_of(const MemoryEvent& e) { return api_info(e.api).family; }

using Released = ReleasedMemory;

class AllocationTable {
 public:
  AllocationTable(ReplayResult& result, ReplayObserver* observer) : result_(result), observer_(observer) {}

  void allocate(const MemoryEvent& e) {
    if (e.result != 0 || e.key == 0) {
      if (e.result != 0) ++result_.failed_allocations;
      return;
    }
    ++result_.allocations;
    const size_t s = space_index(e.api);
    // The address lives again: what was released there before is history, not a double free.
    released_[s].erase_range(e.key, memory_range_end(e));
    // A live entry at the same key means its release went unseen; the new one replaces it.
    auto [slot, fresh] = live_[s].try_emplace(e.key, e);
    if (!fresh) {
      forget(slot->second);
      slot->second = e;
    }
    remember(e);
  }

  DeviceHoldings holdings(int32_t device) const {
    auto it = device_bytes_.find(device);
    return it == device_bytes_.end() ? DeviceHoldings{} : it->second;
  }

  void for_each_live(const std::function<void(const MemoryEvent&)>& visit) const {
    for (const auto& live : live_) {
      for (const auto& [key, allocation] : live) visit(allocation);
    }
  }

  void release(const MemoryEvent& e) {
    if (e.key == 0) return;  // cudaFree(nullptr) and friends are legal no-ops
    if (api_info(e.api).space == KeySpace::VmmMapping) return unmap(e);
    const bool shutdown = e.result == kShutdownResult && family_of(e) != MemoryFamily::HostHeap;
    auto& live = live_[space_index(e.api)];

    if (auto it = live.find(e.key); it != live.end()) {
      const MemoryEvent allocation = it->second;
      if (!releases_family(e.api, family_of(allocation))) {
        if (!shutdown) result_.release_findings.push_back({ReleaseProblem::Mismatched, e, allocation, {}, 0});
        // libc never releases CUDA memory; a CUDA call that refused it released nothing either.
        if (e.result == 0 && family_of(e) != MemoryFamily::HostHeap) return erase(live, it, e);
        failed_releases_.emplace(allocation.seq, e);
        return;
      }
      if (e.result != 0 && !shutdown) return;  // a failed release frees nothing
      if (shutdown) {
        ++result_.released_during_shutdown;
        forget(it->second);
        live.erase(it);
        return;
      }
      return erase(live, it, e);
    }
    if (shutdown) return;

    // A pointer or handle of another kind: an array given to cudaFree, a device pointer to cudaFreeArray.
    for (size_t s = 0; s < kSpaces; ++s) {
      // Handles of different kinds of resource share values (texture and surface objects are
      // small integers): only memory is looked up across spaces.
      if (s == space_index(e.api) || !is_memory_space(static_cast<KeySpace>(s)) ||
          !is_memory_space(api_info(e.api).space))
        continue;
      if (auto other = live_[s].find(e.key); other != live_[s].end()) {
        result_.release_findings.push_back({ReleaseProblem::Mismatched, e, other->second, {}, 0});
        failed_releases_.emplace(other->second.seq, e);
        return;
      }
    }
    if (family_of(e) == MemoryFamily::HostHeap) return;  // ordinary heap memory: not ours to judge

    if (api_info(e.api).space == KeySpace::Address) {
      if (const MemoryEvent* inside = live_containing(live, e.key)) {
        result_.release_findings.push_back({ReleaseProblem::Invalid, e, *inside, {}, e.key - inside->key});
        return;
      }
    }
    if (e.result == 0) {
      // CUDA accepted it: memory cuaudit did not see allocated (handles made by CUDA itself, such
      // as the runtime's own streams, are not worth a note).
      if (!is_resource(family_of(e))) ++result_.unmatched_releases;
      return;
    }
    if (const Released* before = released_[space_index(e.api)].at(e.key)) {
      result_.release_findings.push_back({ReleaseProblem::Double, e, before->allocation, before->release, 0});
      return;
    }
    result_.release_findings.push_back({ReleaseProblem::Invalid, e, {}, {}, 0});
  }

  // The live allocation at exactly `key` (Address space), or nullptr.
  const MemoryEvent* live_at(uint64_t key) const {
    const Live& live = live_[static_cast<size_t>(KeySpace::Address)];
    auto it = live.find(key);
    return it == live.end() ? nullptr : &it->second;
  }
  // The live allocation containing `address`: device, pinned, managed, pool or mapped memory, or a
  // VMM mapping.
  const MemoryEvent* containing(uint64_t address) const {
    for (KeySpace space : {KeySpace::Address, KeySpace::VmmMapping}) {
      if (const MemoryEvent* inside = live_containing(live_[static_cast<size_t>(space)], address)) return inside;
    }
    return nullptr;
  }
  // The released allocation (not allocated again) containing `address`.
  const Released* released_containing(uint64_t address) const {
    return released_[static_cast<size_t>(KeySpace::Address)].containing(address);
  }

  void destroy_context(uint32_t context_uid) {
    for (auto& live : live_) {
      for (auto it = live.begin(); it != live.end();) {
        if (it->second.context_uid == context_uid && dies_with_context(family_of(it->second))) {
          result_.leaks.push_back(leaked(it->second, LeakEnd::ContextDestroyed));
          forget(it->second);
          it = live.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  // Releases forgotten to keep the replay's memory bounded (released_memory.h).
  uint64_t forgotten_releases() const {
    uint64_t n = 0;
    for (const ReleasedRanges& r : released_) n += r.forgotten();
    return n;
  }

  // Auto-free on launch: what the last launch of a graph allocated at `key` is released by the next.
  void release_graph_memory(uint64_t key) {
    auto& live = live_[static_cast<size_t>(KeySpace::Address)];
    auto it = live.find(key);
    if (it == live.end() || family_of(it->second) != MemoryFamily::GraphMemory) return;
    ++result_.releases;
    forget(it->second);
    live.erase(it);
  }

  // Each live allocation moves to the leaks as it leaves the table: the two are never both whole
  // in memory (a million live allocations are a few hundred MB).
  void finish(LeakEnd end) {
    size_t count = 0;
    for (const auto& live : live_) count += live.size();
    result_.leaks.reserve(result_.leaks.size() + count);
    for (auto& live : live_) {
      while (!live.empty()) {
        auto node = live.extract(live.begin());
        result_.leaks.push_back(leaked(node.mapped(), end));
      }
    }
  }

 private:
  using Live = std::map<uint64_t, MemoryEvent>;

  static size_t space_index(Api api) { return static_cast<size_t>(api_info(api).space); }

  // Memory the program holds per device: what the timeline compares with the driver's view.
  void remember(const MemoryEvent& e) {
    if (observer_) observer_->on_live(e);
    if (e.device < 0 || !owns_memory(family_of(e))) return;
    DeviceHoldings& h = device_bytes_[e.device];
    h.total += e.bytes;
    h.by_family[static_cast<size_t>(family_of(e))] += e.bytes;
  }
  void forget(const MemoryEvent& e) {
    if (observer_) observer_->on_gone(e);
    if (e.device < 0 || !owns_memory(family_of(e))) return;
    DeviceHoldings& h = device_bytes_[e.device];
    h.total -= e.bytes;
    h.by_family[static_cast<size_t>(family_of(e))] -= e.bytes;
  }

  void erase(Live& live, Live::iterator it, const MemoryEvent& release) {
    ++result_.releases;
    if (observer_) observer_->on_released(it->second, release);
    forget(it->second);
    released_[space_index(release.api)].add(it->first, {it->second, release});
    live.erase(it);
  }

  // cuMemUnmap releases every mapping inside [ptr, ptr + size).
  void unmap(const MemoryEvent& e) {
    if (e.result != 0) return;
    auto& live = live_[space_index(e.api)];
    auto first = live.lower_bound(e.key);
    auto last = live.lower_bound(memory_range_end(e));
    if (first == last) {
      ++result_.unmatched_releases;
      return;
    }
    result_.releases += static_cast<uint64_t>(std::distance(first, last));
    for (auto it = first; it != last; ++it) forget(it->second);
    live.erase(first, last);
  }

  LeakedAllocation leaked(const MemoryEvent& allocation, LeakEnd end) const {
    LeakedAllocation l{allocation, end, -1};
    if (auto f = failed_releases_.find(allocation.seq); f != failed_releases_.end()) {
      l.failed_release = static_cast<int32_t>(result_.failed_releases.size());
      result_.failed_releases.push_back(f->second);
    }
    return l;
  }

  ReplayResult& result_;
  ReplayObserver* observer_;
  std::array<Live, kSpaces> live_;
  std::array<ReleasedRanges, kSpaces> released_;               // bounded: the most recent releases
  std::unordered_map<uint64_t, MemoryEvent> failed_releases_;  // allocation seq -> the release that failed
  std::map<int32_t, DeviceHoldings> device_bytes_;
};

}  // namespace cuaudit::replay_detail
