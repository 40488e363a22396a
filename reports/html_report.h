// The self-contained HTML report (--html): one file that works offline, with the findings in a
// table that sorts and filters by kind and process, each finding's stacks expandable with the
// source lines around each frame when the source was a regular file under `source_root` (a
// resolved directory; empty: no excerpts) at report time, and the memory timeline per device when
// the run recorded one.
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

std::string render_html(const Report& report, const std::string& source_root);

// The report's JSON made safe inside <script type="application/json">: every '<' becomes \u003c,
// so no text from the target (a kernel named fill<int4>, a path) can close the element.
std::string json_for_script_element(const std::string& json);

}  // namespace cuaudit::report
