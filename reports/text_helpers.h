// Small text helpers the renderers share.
#pragma once

#include <string>
#include <vector>

namespace cuaudit::report {

// "a b c": words joined by single spaces.
std::string join_words(const std::vector<std::string>& words);

// The last component of a path ("/src/app.cu" -> "app.cu"); the path itself when it has no '/'.
std::string basename_of(const std::string& path);

}  // namespace cuaudit::report
