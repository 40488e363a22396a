#include "option_help.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>

#include "option_words.h"

namespace cuaudit {

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
  }
  return names;
}

std::string unknown_option_message(const CLI::App& app, const std::string& arg) {
  const std::string name = arg.substr(0, arg.find('='));
  std::string text = "unknown option " + name;
  const std::vector<std::string> names = option_names(app);
  // The same letters in another case (-v for -V) before the nearest by edits (-h).
  const auto same = std::find_if(names.begin(), names.end(), [&](const std::string& n) {
    return n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
           });
  });
  if (const auto guess = same != names.end() ? std::optional(*same) : closest_word(name, names))
    text += " (did you mean " + *guess + "?)";
  return text;
}

void name_placeholders(CLI::App& app) {
  static const char* const kPlaceholders[] = {"OLD=NEW", "PREFIX", "FILE", "DIR", "TEXT", "NAME", "PERCENT", "MS", "N"};
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    if (opt->get_positional() || type.empty() || type.find('{') != std::string::npos) continue;
    const std::string& help = opt->get_description();
    size_t best = std::string::npos;
    const char* placeholder = nullptr;
    for (const char* word : kPlaceholders) {
      for (size_t at = help.find(word); at != std::string::npos; at = help.find(word, at + 1)) {
        const size_t end = at + strlen(word);
        const bool whole = (at == 0 || !std::isalnum(static_cast<unsigned char>(help[at - 1]))) &&
                           (end == help.size() || !std::isalnum(static_cast<unsigned char>(help[end])));
        if (whole && at < best) best = at, placeholder = word;
        if (whole) break;
      }
    }
    if (placeholder) opt->type_name(placeholder);
  }
}

}  // namespace cuaudit
