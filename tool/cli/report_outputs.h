// Where a command's reports go: the text report (stderr or --log-file, -q, colour) and every
// machine-readable format asked for, each output checked writable before any work is done.
#pragma once

#include <cstdint>
#include <string>

#include "options.h"
#include "report_model.h"

namespace cuaudit {

// --source-root, or the working directory, with links resolved: SARIF paths are relative to it.
std::string resolved_source_root(const Options& o);

// Where the HTML page may take source lines from (empty: nowhere; see report_outputs.cpp).
std::string html_source_root(const Options& o);

// Says on stderr that the HTML page shows no source lines, where that is so.
void say_when_html_has_no_sources(const Options& o);

// The text report as -q, --color and the text options want it (empty: -q and nothing to say).
// -q: a report with no error or warning, complete: nothing for the text to say.
bool quiet_has_nothing_to_say(const Options& o, const report::Report& a);
std::string text_report(const Options& o, const report::Report& a);

// The warning (empty when none) about the user's rules that matched no finding, and about keep
// rules that kept nothing (every finding suppressed: the gate passes by mistake).
std::string idle_rules_warning(const report::Report& a);

// The text report (stderr or --log-file), then every machine-readable format asked for; exits
// with kExitToolFailure when one cannot be written. `pid` expands %p in their names.
void write_outputs(const Options& o, const report::Report& a, uint64_t pid, const std::string& text);

// Exits (kExitUsage, kExitToolFailure) unless every report file can be written.
void refuse_unwritable_outputs(const Options& o);

}  // namespace cuaudit
