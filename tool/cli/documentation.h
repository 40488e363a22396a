// Where cuaudit's documentation is, so that --help and `help COMMAND` name files that exist: the
// installed copy beside the executable (PREFIX/share/doc/cuaudit/docs, as the .deb, the .tar.gz and
// `cmake --install` lay it), else the source checkout a development build came from.
#pragma once

#include <string>

namespace cuaudit {

// The directory holding EXIT_CODES.md and the rest; empty when neither copy is there.
std::string documentation_dir();

// `text` with each "docs/NAME.md" naming the file where it is (documentation_dir()); where there is
// none, "NAME.md in cuaudit's documentation" says what to look for.
std::string with_documentation_paths(const std::string& text);

}  // namespace cuaudit
