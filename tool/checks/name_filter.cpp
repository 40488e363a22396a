#include "name_filter.h"

#include <stdexcept>

#include "frame_filter.h"
#include "function_names.h"

namespace cuaudit {

bool NameFilter::matches(const std::string& name) const {
  for (const std::string& text : contains) {
    if (name.find(text) != std::string::npos) return true;
  }
  const std::string bare = report::short_function_name(name);  // "ns::scale" for "ns::scale<float>(float*, int)"
  const size_t colons = bare.rfind("::");
  const std::string last = colons == std::string::npos ? bare : bare.substr(colons + 2);
  for (const std::string& n : exact) {
    if (name == n || bare == n || last == n) return true;
  }
  return false;
}

void add_to_filter(NameFilter& filter, const std::string& text, const char* option) {
  const std::string key = text.substr(0, 4);
  const std::string value = key == "kns=" || key == "kne=" ? text.substr(4) : text;
  if (value.empty()) throw std::invalid_argument(std::string(option) + ": empty name; give TEXT, kns=TEXT or kne=NAME");
  if (key == "kne=") {
    filter.exact.push_back(value);
  } else if (text.find('=') != std::string::npos && key != "kns=" && text.find('=') < 4) {
    throw std::invalid_argument(std::string(option) + " " + text + ": unknown key; give TEXT, kns=TEXT or kne=NAME");
  } else {
    filter.contains.push_back(value);
  }
}

}  // namespace cuaudit
