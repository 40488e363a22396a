#include "replay.h"

#include <array>
#include <iterator>
#include <map>

namespace cuaudit {
namespace {

// cudaErrorCudartUnloading and CUDA_ERROR_DEINITIALIZED share the value 4: the call came after
// CUDA began tearing itself down at exit.
constexpr int32_t kShutdownResult = 4;

constexpr size_t kSpaces = static_cast<size_t>(KeySpace::VmmMapping) + 1;

// Memory bound to a context dies with it. Pool (stream-ordered) and VMM memory belong to the
// device and the process, not to one context, so a context reset does not release them.
bool dies_with_context(MemoryFamily f) {
  return f != MemoryFamily::StreamOrdered && f != MemoryFamily::VmmPhysical && f != MemoryFamily::VmmReservation &&
         f != MemoryFamily::VmmMapping;
}

class AllocationTable {
 public:
  explicit AllocationTable(ReplayResult& result) : result_(result) {}

  void allocate(const Event& e) {
    if (e.result != 0 || e.key == 0) {
      if (e.result != 0) ++result_.failed_allocations;
      return;
    }
    ++result_.allocations;
    // A live entry at the same key means its release went unseen; the new one replaces it.
    space(e.api)[e.key] = e;
  }

  void release(const Event& e) {
    if (e.key == 0) return;  // cudaFree(nullptr) and friends are legal no-ops
    const bool shutdown = e.result == kShutdownResult;
    if (e.result != 0 && !shutdown) return;  // a failed release frees nothing
    auto& live = space(e.api);
    if (api_info(e.api).space == KeySpace::VmmMapping) {
      // cuMemUnmap releases every mapping inside [ptr, ptr + size).
      auto first = live.lower_bound(e.key);
      auto last = live.lower_bound(e.key + (e.bytes ? e.bytes : 1));
      if (first == last) return note_unmatched(shutdown);
      count_release(shutdown, static_cast<uint64_t>(std::distance(first, last)));
      live.erase(first, last);
      return;
    }
    auto it = live.find(e.key);
    if (it == live.end()) return note_unmatched(shutdown);
    count_release(shutdown, 1);
    live.erase(it);
  }

  void destroy_context(uint32_t context_uid) {
    for (auto& live : spaces_) {
      for (auto it = live.begin(); it != live.end();) {
        if (it->second.context_uid == context_uid && dies_with_context(api_info(it->second.api).family)) {
          result_.leaks.push_back({it->second, LeakEnd::ContextDestroyed});
          it = live.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  void finish(LeakEnd end) {
    for (auto& live : spaces_) {
      for (auto& [key, allocation] : live) result_.leaks.push_back({allocation, end});
      live.clear();
    }
  }

 private:
  std::map<uint64_t, Event>& space(Api api) { return spaces_[static_cast<size_t>(api_info(api).space)]; }

  void count_release(bool shutdown, uint64_t n) {
    (shutdown ? result_.released_during_shutdown : result_.releases) += n;
  }
  void note_unmatched(bool shutdown) {
    if (!shutdown) ++result_.unmatched_releases;
  }

  ReplayResult& result_;
  std::array<std::map<uint64_t, Event>, kSpaces> spaces_;
};

}  // namespace

ReplayResult replay(const ProcessTrace& trace) {
  ReplayResult result;
  AllocationTable table(result);
  for (const Event& e : trace.events) {
    switch (e.kind) {
      case EventKind::Alloc:
        table.allocate(e);
        break;
      case EventKind::Free:
        table.release(e);
        break;
      case EventKind::ContextDestroyed:
        table.destroy_context(e.context_uid);
        break;
      case EventKind::ContextCreated:
      case EventKind::ProcessEnd:
        break;
    }
  }
  table.finish(trace.reached_exit ? LeakEnd::ProcessExit : LeakEnd::ProcessDied);
  return result;
}

}  // namespace cuaudit
