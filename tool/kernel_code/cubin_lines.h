// The source lines of a cubin's kernels, from its DWARF line table (.debug_line: nvcc writes one
// with -lineinfo or -G). nvcc writes one sequence per kernel, each counting from address 0 of the
// kernel's own section (.text.<kernel>), which the relocation of the sequence's DW_LNE_set_address
// names. elfutils' libdw reads line tables only in address order across all sequences, which mixes
// the kernels' rows, so the line program (DWARF 2 to 4, the versions nvcc writes) is read here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuaudit {

struct LineRow {
  uint64_t offset = 0;  // from the start of the kernel's code
  std::string file;     // as the line table names it (with its directory when it names one)
  uint32_t line = 0;
  bool end = false;  // the end of the sequence: the first offset past the kernel's code
};

// Each kernel's rows (by the name its section has, mangled for C++ kernels), in address order.
// Empty when the cubin has no line table, or one this reader does not know.
std::map<std::string, std::vector<LineRow>> cubin_lines(std::string_view image);

// The row that covers `offset` in `rows`; nullopt when none does (past the end, or no row yet).
std::optional<LineRow> line_at(const std::vector<LineRow>& rows, uint64_t offset);

}  // namespace cuaudit
