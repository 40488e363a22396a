#include "exit_codes.h"

#include <cstdlib>
#include <iostream>

namespace cuaudit {

void fail(int code, const std::string& message) {
  std::cerr << "cuaudit: error: " << message << '\n';
  std::exit(code);
}

}  // namespace cuaudit
