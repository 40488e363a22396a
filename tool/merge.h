// `cuaudit merge`: one report from the per-rank reports of an MPI or Slurm job. Findings that are
// the same bug (same kind, API, result and user frames) are merged, with the ranks they came from.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cuaudit {

// A JSON report, or the report.json of a directory written by --output. Throws std::runtime_error
// saying what is wrong.
nlohmann::json read_json_report(const std::string& input);

// Each input is a JSON report or a run directory holding report.json (what --output writes);
// its position in `inputs` is its rank. Throws std::runtime_error on unreadable input.
nlohmann::json merge_reports(const std::vector<std::string>& inputs);

// The merged findings as text, one block per finding with its ranks.
std::string render_merged_text(const nlohmann::json& merged);

}  // namespace cuaudit
