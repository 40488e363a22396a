#include "pool_names.h"

#include <fmt/format.h>

namespace cuaudit {

std::string pool_description(const std::map<uint32_t, PoolInfo>& pools, uint64_t pool) {
  auto it = pools.find(static_cast<uint32_t>(pool));
  if (it == pools.end()) return fmt::format("pool #{}", pool);
  const PoolInfo& p = it->second;
  const SourceInfo& source = source_info(p.kind);
  // A program's own pools are told apart by the names it gave them; a framework has one pool.
  if (source.kind == SourceKind::NvtxHeap) {
    return p.name.empty() ? fmt::format("unnamed {} #{}", source.description, pool)
                          : fmt::format("pool '{}' ({})", p.name, source.description);
  }
  return source.description;
}

}  // namespace cuaudit
