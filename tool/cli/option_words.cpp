#include "option_words.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>

namespace cuaudit {

std::vector<std::string> split_option_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string::npos) throw std::invalid_argument("unterminated ' quote");
      word += text.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i >= text.size()) throw std::invalid_argument("unterminated \" quote");
        if (text[i] == '"') break;
        if (text[i] == '\\' && i + 1 < text.size() && std::string_view("\"\\$`").find(text[i + 1]) != std::string::npos)
          ++i;
        word += text[i];
      }
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) throw std::invalid_argument("trailing backslash");
      word += text[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}
}  // namespace

std::optional<std::string> closest_word(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(1, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

namespace {

// A number and a unit of `units` after it, in the units' base: nullopt when either is missing or
// the product is negative or above `limit`.
std::optional<uint64_t> scaled_number(const std::string& text, const std::map<std::string, double>& units,
                                      double limit) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const auto it = units.find(text.substr(used));
  if (it == units.end() || !(value >= 0) || value * it->second > limit) return std::nullopt;
  return static_cast<uint64_t>(value * it->second);
}

}  // namespace

std::optional<uint64_t> parse_duration_ms(const std::string& text) {
  static const std::map<std::string, double> kUnits = {{"", 1000},    {"ms", 1},       {"s", 1000},
                                                       {"m", 60'000}, {"min", 60'000}, {"h", 3'600'000}};
  return scaled_number(text, kUnits, 1e15);
}

std::optional<uint64_t> parse_byte_size(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  static const std::map<std::string, double> kUnits = {
      {"", 1},          {"B", 1},           {"K", 1024.0},       {"KiB", 1024.0},
      {"M", 1048576.0}, {"MiB", 1048576.0}, {"G", 1073741824.0}, {"GiB", 1073741824.0}};
  return scaled_number(text, kUnits, 1e18);
}

}  // namespace cuaudit
