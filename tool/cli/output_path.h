// Output file names as compute-sanitizer users write them, checked before the program runs.
#pragma once

#include <cstdint>
#include <string>

namespace cuaudit {

// An output named "-" goes to standard output (`--json -`, as most tools read it).
inline constexpr const char* kStandardOutput = "-";

// Expands %p (the program's pid), %q{NAME} (environment variable NAME) and %% in `pattern`.
// Throws std::runtime_error for a %q{NAME} whose variable is unset or holds a '/', '.' or '..'.
std::string expand_output_path(const std::string& pattern, uint64_t pid);

// Whether a file can be created or replaced at `pattern` (its directory must be writable);
// `why` says what is wrong. %-sequences are checked through their directory only.
bool output_path_writable(const std::string& pattern, std::string& why);

// `path` with `tag` before its extension: ("out/report.json", "snapshot-2") -> "out/report.snapshot-2.json";
// a name without an extension gets ".tag" at its end.
std::string numbered_path(const std::string& path, const std::string& tag);

// Writes `contents` to `path` (standard output for "-") or exits with kExitToolFailure.
void write_file_or_fail(const std::string& path, const std::string& contents);

}  // namespace cuaudit
