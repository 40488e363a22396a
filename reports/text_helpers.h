// Small text helpers the renderers share.
#pragma once

#include <string>
#include <vector>

namespace cuaudit::report {

// "a b c": words joined by single spaces.
std::string join_words(const std::vector<std::string>& words);

// The last component of a path ("/src/app.cu" -> "app.cu"); the path itself when it has no '/'.
std::string basename_of(const std::string& path);

// `text` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD (text from
// the target may be in any encoding; XML and JSON consumers need UTF-8).
std::string valid_utf8(const std::string& text);

}  // namespace cuaudit::report
