// Words of an options string and the nearest known word: CUAUDIT_OPTIONS, and "did you mean".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuaudit {

// Splits CUAUDIT_OPTIONS as a POSIX shell splits words: blanks separate, '...' and "..." quote,
// a backslash escapes the next character (outside single quotes). Throws std::invalid_argument
// for an unterminated quote or a trailing backslash.
std::vector<std::string> split_option_words(const std::string& text);

// The candidate closest to `word` by edit distance, when close enough to be a likely typo
// (at most a third of the word's length, and at least one edit allowed); nullopt otherwise.
std::optional<std::string> closest_word(const std::string& word, const std::vector<std::string>& candidates);

// "30s", "10m", "1h", "500ms", "90" (seconds) in milliseconds; nullopt when it is none of these.
std::optional<uint64_t> parse_duration_ms(const std::string& text);

// "512K", "1M", "2G" (powers of 1024; KiB, MiB and GiB too), "4096" (bytes) in bytes; nullopt when
// it is none of these.
std::optional<uint64_t> parse_byte_size(const std::string& text);

}  // namespace cuaudit
