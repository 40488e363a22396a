// Small text helpers the renderers share.
#pragma once

#include <cstddef>
#include <cstdint>
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

// The length of the valid UTF-8 sequence at text[i] (1-4) and its code point; 0 when the byte
// there starts none.
size_t utf8_sequence(const std::string& text, size_t i, uint32_t& cp);
// The UTF-8 bytes of code point `cp` (at most U+10FFFF).
std::string utf8_of(uint32_t cp);

// Text from the target (argv, paths, symbol names) as a terminal may show it: control characters,
// bidi controls and invalid UTF-8 as escapes (\x1b, \u{202e}), a newline as \n.
std::string visible(const std::string& text);

// A path (or any word) as a POSIX shell reads it back, for a command the user may paste: as it is
// when only safe characters make it, else in single quotes; with control, bidi or invalid bytes,
// as $'...' with escapes (bash, zsh and ksh read those), so that no line breaks and nothing hides.
std::string shell_word(const std::string& text);

// A code point that would steer a terminal or reorder what it shows: C0 and C1 controls, DEL, and
// bidirectional controls (U+202E would show a name backwards: "Trojan Source").
bool is_terminal_control(uint32_t cp);

}  // namespace cuaudit::report
