// The bytes of a file under tests/fixtures/ (a committed cubin, a recorded JSON): empty when absent.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

inline std::string fixture(const std::string& name) {
  std::ifstream in(std::string(CUAUDIT_TEST_FIXTURES) + "/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
