#include "text_helpers.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace cuaudit::report {

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

size_t utf8_sequence(const std::string& text, size_t i, uint32_t& cp) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  const unsigned char c = p[i];
  const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  bool ok = len > 0 && i + len <= n;
  for (size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xc0) == 0x80;
  if (!ok) return 0;
  cp = len == 1   ? c
       : len == 2 ? ((c & 0x1fu) << 6) | (p[i + 1] & 0x3fu)
       : len == 3 ? ((c & 0x0fu) << 12) | ((p[i + 1] & 0x3fu) << 6) | (p[i + 2] & 0x3fu)
                  : ((c & 0x07u) << 18) | ((p[i + 1] & 0x3fu) << 12) | ((p[i + 2] & 0x3fu) << 6) | (p[i + 3] & 0x3fu);
  // No overlong forms, surrogates or code points past U+10FFFF.
  ok = len == 1 || (len == 2 && cp >= 0x80) || (len == 3 && cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff)) ||
       (len == 4 && cp >= 0x10000 && cp <= 0x10ffff);
  return ok ? len : 0;
}

std::string utf8_of(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | cp >> 6);
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | cp >> 12);
    out += static_cast<char>(0x80 | (cp >> 6 & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | cp >> 18);
    out += static_cast<char>(0x80 | (cp >> 12 & 0x3f));
    out += static_cast<char>(0x80 | (cp >> 6 & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(text, i, cp);
    if (!len) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    out.append(text, i, len);
    i += len;
  }
  return out;
}

bool is_terminal_control(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||     // C0, DEL, C1 (U+009B is CSI on some terminals)
         (cp >= 0x202a && cp <= 0x202e) ||              // bidi embeddings and overrides
         (cp >= 0x2066 && cp <= 0x2069) ||              // bidi isolates
         cp == 0x2028 || cp == 0x2029 ||                // line and paragraph separators: editors break lines there
         cp == 0x200e || cp == 0x200f || cp == 0x061c;  // direction marks
}

// Text from the target (argv, paths, symbol names) shown as text: a control character would reach
// the terminal (ANSI escapes, C1's CSI), forge report lines (a newline) or reorder what is shown
// (bidi overrides), and invalid UTF-8 would reach tools that expect text, so each is an escape.
std::string visible(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(text, i, cp);
    if (!len) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (cp == '\n') {
      out += "\\n";
    } else if (is_terminal_control(cp)) {
      out += cp < 0x80 ? fmt::format("\\x{:02x}", cp) : fmt::format("\\u{{{:04x}}}", cp);
    } else {
      out.append(text, i, len);
    }
    i += len;
  }
  return out;
}

std::string shell_word(const std::string& text) {
  const auto safe = [](unsigned char c) { return std::isalnum(c) || std::strchr("_/.,:=+@%-", c) != nullptr; };
  if (!text.empty() && std::all_of(text.begin(), text.end(), [&](char c) { return safe(c); })) return text;
  if (visible(text) == text) {  // nothing a terminal must not see: single quotes keep every byte
    std::string out = "'";
    for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  std::string out = "$'";
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t len = utf8_sequence(text, i, cp);
    if (!len || cp < 0x20 || cp == 0x7f || (len > 1 && is_terminal_control(cp))) {
      for (size_t b = 0; b < (len ? len : 1); ++b)  // each byte, as $'...' reads \xHH
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i + b]));
    } else if (cp == '\\' || cp == '\'') {
      out += '\\';
      out += static_cast<char>(cp);
    } else {
      out.append(text, i, len);
    }
    i += len ? len : 1;
  }
  return out + "'";
}

}  // namespace cuaudit::report
