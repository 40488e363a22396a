// `cuaudit suppressions import FILE.xml`: compute-sanitizer's saved records as cuaudit
// suppressions, on standard output (sanitizer_xml_import.h says which records become rules).
#pragma once

#include "options.h"

namespace cuaudit {

// The exit status: 0, or kExitUsage when the file cannot be read or is not compute-sanitizer's XML.
int suppressions_command(const Options& o);

}  // namespace cuaudit
