#include "pool_names.h"

#include <fmt/format.h>

namespace cuaudit {

std::string pool_description(const std::map<uint32_t, PoolInfo>& pools, uint64_t pool) {
  auto it = pools.find(static_cast<uint32_t>(pool));
  if (it == pools.end()) return fmt::format("pool #{}", pool);
  const PoolInfo& p = it->second;
  switch (p.kind) {
    case trace::PoolKind::NvtxHeap:
      return p.name.empty() ? fmt::format("unnamed NVTX heap #{}", pool) : fmt::format("pool '{}' (NVTX heap)", p.name);
    case trace::PoolKind::CupyPool:
      return "CuPy's memory pool";
    case trace::PoolKind::TorchCaching:
      return "PyTorch's CUDA caching allocator";
  }
  return fmt::format("pool #{}", pool);
}

bool is_framework_pool(const std::map<uint32_t, PoolInfo>& pools, uint64_t pool) {
  auto it = pools.find(static_cast<uint32_t>(pool));
  return it != pools.end() && it->second.kind != trace::PoolKind::NvtxHeap;
}

}  // namespace cuaudit
