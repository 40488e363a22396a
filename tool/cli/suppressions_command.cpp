#include "suppressions_command.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "exit_codes.h"
#include "sanitizer_xml_import.h"

namespace cuaudit {

int suppressions_command(const Options& o) {
  if (o.suppressions_action != "import") {
    std::cerr << "cuaudit suppressions: no action `" << o.suppressions_action
              << "`; the one action is import (cuaudit suppressions import FILE.xml)\n";
    return kExitUsage;
  }
  const std::string& path = o.suppressions_input;
  struct stat st;
  const bool exists = stat(path.c_str(), &st) == 0;
  std::ifstream in;
  if (exists && S_ISREG(st.st_mode)) in.open(path, std::ios::binary);
  if (!in) {
    std::cerr << "cuaudit: cannot read " << path << ": " << (exists ? "not a regular file" : strerror(errno)) << '\n';
    return kExitUsage;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<SanitizerRecord> records;
  try {
    records = read_sanitizer_xml(text.str());
  } catch (const std::exception& e) {
    std::cerr << "cuaudit: " << path << ": " << e.what() << '\n';
    return kExitUsage;
  }
  const SanitizerImport imported = suppressions_from_sanitizer(records, path);
  std::cout << imported.rules << std::flush;
  std::cerr << "cuaudit: " << imported.blocks << " rule(s) from " << records.size() << " record(s) of " << path;
  if (imported.without_rule)
    std::cerr << "; " << imported.without_rule << " record(s) without a rule, listed as comments (device-side errors "
              << "cuaudit does not report, or no host frame of the program's)";
  std::cerr << '\n';
  return 0;
}

}  // namespace cuaudit
