// The sanitizer-style text report (stderr or --log-file).
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

enum class LeakDetail { Full, Summary, None };

enum class Demangle { Full, Simple, None };  // --demangle full | simple | no

struct TextOptions {
  LeakDetail leak_detail = LeakDetail::Full;
  size_t print_limit = 100;  // findings printed in full; 0 = no limit
  // --gen-suppressions: under each finding, a rule that would suppress it.
  std::string (*suggest_suppression)(const Finding&) = nullptr;
  // --fold-frames: runs of frames inside Python's libraries and interpreter, and those below main,
  // are one line each with their count (the JSON and HTML keep every frame).
  bool fold_frames = true;
  Demangle demangle = Demangle::Full;
  bool colour = false;  // --color: errors red, warnings yellow, the summary bold (a terminal)
  // --show-notes: every note (info finding) on a line of its own. Without it, a process's notes
  // but `live` (a snapshot's subject) are one summary line: what gates comes first and stands out.
  bool show_notes = false;
};

std::string render_text(const Report& report, const TextOptions& options);

// `cuaudit diff OLD NEW`: the new report's findings, new and still present (Finding::baseline),
// and the baseline's findings that are gone (BaselineResult::fixed).
std::string render_baseline_diff(const Report& report);

// `cuaudit merge`: one line per merged finding with the ranks it came from, and the summary.
std::string render_merged_text(const Report& merged);

}  // namespace cuaudit::report
