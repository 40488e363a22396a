// --kernel-name / --kernel-name-exclude (launch findings) and --target-processes-filter (processes),
// in compute-sanitizer's spelling: "kns=TEXT" matches names that contain TEXT, "kne=NAME" the
// function named exactly NAME, without its parameters and template arguments, with or without its
// namespaces ("scale" and "ns::scale" both name "ns::scale<float>(float*, int)"); a plain TEXT is
// "kns=TEXT".
#pragma once

#include <string>
#include <vector>

namespace cuaudit {

struct NameFilter {
  std::vector<std::string> contains, exact;  // any of them matches

  bool empty() const { return contains.empty() && exact.empty(); }
  bool matches(const std::string& name) const;
};

// Reads one "kns=..." / "kne=..." / plain word into `filter`; throws std::invalid_argument for an
// empty one or an unknown "key=".
void add_to_filter(NameFilter& filter, const std::string& text, const char* option);

}  // namespace cuaudit
