#include "exit_codes.h"
#include "text_helpers.h"

#include <cstdlib>
#include <iostream>

namespace cuaudit {

namespace {
std::string g_run_dir;
}  // namespace

void say_on_failure(const std::string& run_dir) { g_run_dir = run_dir; }

void fail(int code, const std::string& message) {
  std::cerr << "cuaudit: error: " << message << '\n';
  if (!g_run_dir.empty())
    std::cerr << "cuaudit: the recorded run is in " << report::shell_word(g_run_dir)
              << " (analyze it again with: cuaudit report " << report::shell_word(g_run_dir) << ")\n";
  std::exit(code);
}

}  // namespace cuaudit
