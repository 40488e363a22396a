// The replay's table of CUDA's own allocations (every family but pools' blocks, which PoolHeaps
// keeps): what is live in each key space, what was released there (for double and invalid frees
// and stale launch arguments), what each device holds, and the findings of releases as they come.
// Internal to the replay (replay.cpp); a header of its own so that the replay's loop reads alone.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <map>
#include <unordered_map>

#include "pool_heaps.h"
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
  AllocationTable(ReplayResult& result, ReplayObserver* observer, const PoolHeaps& pools)
      : result_(result), observer_(observer), pools_(pools) {}

  void allocate(const MemoryEvent& e) {
    if (e.result != 0 || e.key == 0) {
      if (e.result != 0) ++result_.failed_allocations;
      return;
    }
    ++result_.allocations;
    const size_t s = space_index(e.api);
    // The address lives again: what was released there before is history, not a double free.
    auto& released = released_[s];
    released.erase(released.lower_bound(e.key), released.lower_bound(memory_range_end(e)));
    // A live entry at the same key means its release went unseen; the new one replaces it.
    if (auto old = live_[s].find(e.key); old != live_[s].end()) forget(old->second);
    live_[s][e.key] = e;
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
    auto& released = released_[space_index(e.api)];
    if (auto before = released.find(e.key); before != released.end()) {
      result_.release_findings.push_back(
          {ReleaseProblem::Double, e, before->second.allocation, before->second.release, 0});
      return;
    }
    result_.release_findings.push_back({ReleaseProblem::Invalid, e, {}, {}, 0});
  }

  // A pointer a launch was given: inside live memory (a pool's block, device, pinned, managed, pool,
  // mapped), or inside memory that was released and not allocated again.
  void judge_launch_param(const Event& e, bool in_graph_memory) {
    LaunchParamJudgement j{e, {}, {}, {}, 0};
    const uint64_t value = e.launch_param().value;
    // A pool's block first: the offset that matters is the one into the block the program was given.
    if (const MemoryEvent* block = pools_.containing(value)) {
      j.live = *block;
      j.offset = value - block->key;
    }
    for (KeySpace space : {KeySpace::Address, KeySpace::VmmMapping}) {
      if (j.live) break;
      if (const MemoryEvent* inside = live_containing(live_[static_cast<size_t>(space)], value)) {
        j.live = *inside;
        j.offset = value - inside->key;
      }
    }
    // Graph memory exists only while its graph runs: a kernel node given it was checked when the
    // memory was not there (the driver knows no memory at the address then).
    if (!j.live && in_graph_memory && e.launch_param().problem == trace::LaunchProblem::NotAccessible) return;
    // A block returned to its pool is stale although the pool's memory around it is still live.
    const bool in_block = j.live && is_pool_block(family_of(*j.live));
    if (!in_block) {
      const Released* r = pools_.released_containing(value);
      if (!r && !j.live)
        r = released_containing(released_[static_cast<size_t>(KeySpace::Address)],
                                value);  // live memory, not a returned block
      if (r) {
        j.live.reset();
        j.freed = r->allocation;
        j.release = r->release;
        j.offset = value - r->allocation.key;
      }
    }
    result_.launch_params.push_back(std::move(j));
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
    released_[space_index(release.api)][it->first] = {it->second, release};
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
  const PoolHeaps& pools_;  // where a launch argument into a pool's block is looked up first
  std::array<Live, kSpaces> live_;
  std::array<std::map<uint64_t, Released>, kSpaces> released_;
  std::unordered_map<uint64_t, MemoryEvent> failed_releases_;  // allocation seq -> the release that failed
  std::map<int32_t, DeviceHoldings> device_bytes_;
};

}  // namespace cuaudit::replay_detail
