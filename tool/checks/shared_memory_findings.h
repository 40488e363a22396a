// Memory shared between the run's processes (CUDA IPC handles, pool pointer exports): the
// exporter released it while a process that imported it still had it open. Needs both processes
// traced: imports are paired with exports by the hash of the handle that travelled between them.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "replay.h"
#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

// What one process's replay saw of the memory it shared: how each import was opened and when it
// was closed, and the first release of each exported allocation after its export.
struct SharedMemoryUse {
  struct Import {
    SharedMemoryFact fact;
    Api api = Api::Count;    // the allocation that opened it (Count: not seen)
    uint64_t closed_ns = 0;  // 0: never closed
  };
  struct Export {
    SharedMemoryFact fact;
    std::optional<MemoryEvent> release;
  };
  uint64_t pid = 0;
  uint64_t end_ns = 0;  // the process's last event
  std::vector<Import> imports;
  std::vector<Export> exports;
};

class SharedMemoryObserver : public ReplayObserver {
 public:
  explicit SharedMemoryObserver(const ProcessTrace& trace);
  void on_event(const Event& e) override;
  const SharedMemoryUse& use() const { return use_; }

 private:
  SharedMemoryUse use_;
  std::unordered_multimap<uint64_t, size_t> import_by_seq_;
  // pointer -> (index, is an import): facts still waiting for the pointer's release
  std::unordered_multimap<uint64_t, std::pair<size_t, bool>> waiting_;
};

// Every import of the run, by handle: which process opened it, when, and until when.
class SharedMemoryImports {
 public:
  explicit SharedMemoryImports(const std::vector<SharedMemoryUse>& processes);

  struct Mapping {
    uint64_t pid = 0;
    Api api = Api::Count;  // how it was opened (cudaIpcOpenMemHandle, cudaMemPoolImportPointer, ...)
    uint64_t opened_ns = 0;
    uint64_t closed_ns = 0;  // 0: never closed
    uint64_t end_ns = 0;     // the importer's last fact (when never closed)
  };
  const std::vector<Mapping>* of(uint64_t handle_hash) const;
  bool empty() const { return imports_.empty(); }

 private:
  std::unordered_map<uint64_t, std::vector<Mapping>> imports_;
};

std::vector<report::Finding> shared_memory_findings(const SharedMemoryUse& exporter, const SharedMemoryImports& imports,
                                                    StackResolver& stacks);

// What the replay of a trace with all its events in memory sees (tests).
SharedMemoryUse shared_memory_use(const ProcessTrace& trace);

}  // namespace cuaudit
