// A folder of a test's own under the system's temporary one, removed with everything in it when the
// test is done.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace cuaudit::testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const char* name = "cuaudit-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (std::string(name) + "-XXXXXX")).string();
    path = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace cuaudit::testing
