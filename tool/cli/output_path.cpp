#include "output_path.h"

#include "safe_file.h"

#include <sys/stat.h>
#include <unistd.h>
#include <filesystem>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "exit_codes.h"

namespace cuaudit {

std::string expand_output_path(const std::string& pattern, uint64_t pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == 'p') {
      out += std::to_string(pid);
    } else if (c == '%') {
      out += '%';
    } else if (c == 'q' && i + 1 < pattern.size() && pattern[i + 1] == '{') {
      const size_t close = pattern.find('}', i + 2);
      if (close == std::string::npos) {
        out += pattern.substr(i - 1);
        break;
      }
      const std::string name = pattern.substr(i + 2, close - i - 2);
      const char* value = getenv(name.c_str());
      // An unset variable would make every rank share one name; a '/' or '..' in its value would
      // put the file elsewhere: both are refused.
      if (!value) throw std::runtime_error(fmt::format("%q{{{}}} in {}: {} is not set", name, pattern, name));
      if (strchr(value, '/') || strcmp(value, "..") == 0 || strcmp(value, ".") == 0) {
        throw std::runtime_error(
            fmt::format("%q{{{}}} in {}: the value '{}' is not a file name part", name, pattern, value));
      }
      out += value;
      i = close;
    } else {
      out += '%';
      out += c;
    }
  }
  return out;
}

bool output_path_writable(const std::string& pattern, std::string& why) {
  if (pattern == kStandardOutput) return true;
  const std::string path = expand_output_path(pattern, 0);
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    why = fmt::format("cannot write {}: directory {} does not exist", pattern, dir);
    return false;
  }
  if (access(dir.c_str(), W_OK) != 0) {
    why = fmt::format("cannot write {}: directory {} is not writable", pattern, dir);
    return false;
  }
  if (stat(path.c_str(), &st) == 0 && (S_ISDIR(st.st_mode) || access(path.c_str(), W_OK) != 0)) {
    why = fmt::format("cannot write {}: {}", pattern, S_ISDIR(st.st_mode) ? "it is a directory" : "permission denied");
    return false;
  }
  return true;
}

void write_file_or_fail(const std::string& path, const std::string& contents) {
  std::string error;
  if (path == kStandardOutput) {
    std::cout << contents << std::flush;
    if (!std::cout) fail(kExitToolFailure, "cannot write to standard output");
    return;
  }
  // A file (or a link to one) is replaced at once, through a new file beside it: a disk that fills or
  // a `ulimit -f` leaves the old report or none, never half of the new one. A FIFO or a device
  // (/dev/stderr) is written in place.
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::weakly_canonical(path, ec);
  const auto status = std::filesystem::status(ec ? std::filesystem::path(path) : target, ec);
  const bool in_place = !ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
  const bool written = in_place ? write_whole_file(path, contents, error)
                                : replace_file(target.empty() ? path : target.string(), contents, error);
  if (!written) fail(kExitToolFailure, error);
}

std::string numbered_path(const std::string& path, const std::string& tag) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1) {
    return path + "." + tag;
  }
  return path.substr(0, dot) + "." + tag + path.substr(dot);
}

}  // namespace cuaudit
