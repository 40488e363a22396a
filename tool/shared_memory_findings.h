// Memory shared between the run's processes (CUDA IPC handles, pool pointer exports): the
// exporter released it while a process that imported it still had it open. Needs both processes
// traced: imports are paired with exports by the hash of the handle that travelled between them.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "report_model.h"
#include "stack_resolver.h"
#include "trace_model.h"

namespace cuaudit {

// Every import of the run, by handle: which process opened it, when, and until when.
class SharedMemoryImports {
 public:
  explicit SharedMemoryImports(const std::vector<ProcessTrace>& traces);

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

std::vector<report::Finding> shared_memory_findings(const ProcessTrace& exporter, const SharedMemoryImports& imports,
                                                    StackResolver& stacks);

}  // namespace cuaudit
