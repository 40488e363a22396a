// --path-map OLD=NEW and --strip-path-prefix PREFIX: source paths as the reader knows them. A run
// recorded in a container or on a build machine names its sources where they were built; mapping
// them makes the HTML page find the source lines, SARIF paths match the repository, and
// suppressions written against one checkout hold for another.
#pragma once

#include <string>
#include <vector>

#include "report_model.h"

namespace cuaudit {

struct PathMapping {
  std::string from;  // a directory prefix as recorded
  std::string to;    // what replaces it ("" strips it)
};

// "OLD=NEW" as given on the command line; throws std::invalid_argument with what to write instead.
PathMapping parse_path_mapping(const std::string& text);

// The file of `path` with the first mapping whose prefix matches a whole leading directory
// (/build maps /build/a.cu, not /buildx/a.cu); unchanged when none does.
std::string map_path(const std::string& path, const std::vector<PathMapping>& mappings);

// Every frame of every finding, related stack and peak site.
void map_report_paths(report::Report& report, const std::vector<PathMapping>& mappings);

}  // namespace cuaudit
