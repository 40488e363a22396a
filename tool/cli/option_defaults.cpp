#include "option_defaults.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "option_words.h"

namespace cuaudit {
namespace {

constexpr const char* kFileName = ".cuauditrc";

// The file's words: blank lines and lines starting with `#` are skipped, the rest split as
// CUAUDIT_OPTIONS is.
std::vector<std::string> file_words(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot be read");
  std::string line, text;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line[first] != '#') text += line + '\n';
  }
  try {
    return split_option_words(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

}  // namespace

std::string find_options_file(const std::string& directory) {
  std::string dir = directory;
  while (!dir.empty()) {
    const std::string path = (dir == "/" ? "" : dir) + "/" + kFileName;
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) return path;
    if (dir == "/") break;
    const auto slash = dir.rfind('/');
    dir = slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
  }
  return {};
}

DefaultOptions read_default_options() {
  DefaultOptions d;
  char cwd[4096];
  const std::string directory = getcwd(cwd, sizeof cwd) ? cwd : "";
  const char* named = getenv("CUAUDIT_OPTIONS_FILE");
  if (named) {
    d.file = named;  // given by the user: read whoever owns it
    if (!d.file.empty()) d.from_file = file_words(d.file);
  } else if (const std::string found = find_options_file(directory); !found.empty()) {
    // As valgrind does with ./.valgrindrc: a file someone else could have put in a directory above
    // must not set the options of the user's run.
    struct stat st;
    if (stat(found.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & (S_IWGRP | S_IWOTH))) {
      d.warnings.push_back(found + " was not read: it is not a regular file of yours that only you can write");
    } else {
      d.file = found;
      d.from_file = file_words(found);
    }
  }
  if (const char* env = getenv("CUAUDIT_OPTIONS"); env && *env) {
    try {
      d.from_environment = split_option_words(env);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("CUAUDIT_OPTIONS: ") + e.what());
    }
  }
  return d;
}

std::vector<std::string> words_taken_by(const CLI::App& command, const CLI::App& every,
                                        const std::vector<std::string>& words) {
  std::vector<std::string> taken;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    const std::string name = word.substr(0, word.find('='));
    const CLI::Option* known = every.get_option_no_throw(name);
    // An option's value is the next word unless it came with `=`, or the option is a flag.
    const bool value_follows = known && word.find('=') == std::string::npos && known->get_type_size() != 0 &&
                               known->get_expected_min() > 0 && i + 1 < words.size();
    const bool keep = command.get_option_no_throw(name) != nullptr;
    if (keep) taken.push_back(word);
    if (value_follows) {
      if (keep) taken.push_back(words[i + 1]);
      ++i;
    }
  }
  return taken;
}

std::vector<std::string> default_words(const DefaultOptions& defaults, const CLI::App& command, const CLI::App* every) {
  for (const std::string& w : defaults.warnings) std::cerr << "cuaudit: warning: " << w << '\n';
  std::vector<std::string> words = defaults.from_file;
  words.insert(words.end(), defaults.from_environment.begin(), defaults.from_environment.end());
  return every ? words_taken_by(command, *every, words) : words;
}

}  // namespace cuaudit
