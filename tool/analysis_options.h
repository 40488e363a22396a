// What the analysis of a run directory is asked to do: the options every stage reads (the command
// line fills them; tool/checks/checks.cpp's table says which check each turns on).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "check_options.h"
#include "debug_files.h"
#include "export_collectors.h"
#include "name_filter.h"
#include "path_map.h"
#include "run_dir.h"
#include "suppressions.h"

namespace cuaudit {

// The checks' options (check_options.h: --leak-check, the thresholds) and the rest.
struct AnalysisOptions : CheckOptions {
  size_t num_callers = 0;                // frames kept per stack; 0 = all
  Suppressions suppressions;             // --suppressions rules, already loaded
  std::vector<PathMapping> path_map;     // --path-map, --strip-path-prefix: before suppressions match
  NameFilter kernels, kernels_excluded;  // --kernel-name, --kernel-name-exclude: launch findings
  NameFilter processes;                  // --target-processes-filter: executable names reported
  std::string nvdisasm;                  // --nvdisasm: the disassembler for kernel-access checks (empty: found)
  DebugFileSearch debug_files;           // --debug-file-directory: separate debug files of stripped modules
  ExportRequests exports;                // --perfetto, --pprof, --memory-viz
  // `cuaudit snapshot`, --snapshot-interval: the program may still be running. A process whose trace
  // has no end yet is reported as of now: what it holds is `live`, not leaked, and a last chunk cut
  // short is the one being written, not damage.
  bool snapshot = false;
  // `cuaudit run` whose run.json could not be written (a full disk): how the program ended, as the
  // launcher knows it, and why the file is missing. The report then says so and is incomplete, since
  // what filled the disk may have cut the traces too.
  std::optional<RunInfo> unsaved_run;
  std::string unsaved_run_error;
};

}  // namespace cuaudit
