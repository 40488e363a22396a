#pragma once
#include <cstddef>

struct CallPattern {
  const char* text;
  void (*run)();
  bool checked;  // does the program look at the result?
};
extern const CallPattern kCallPatterns[];
extern const size_t kCallPatternCount;
