// The commands cuaudit knows, as its command line and --help name them: the word that selects each,
// its title, usage line and footer (exit statuses), and the version line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "options.h"

namespace cuaudit {

struct CommandText {
  Command command;
  const char* word;  // the command line's first word; the run command needs none
  const char* name;
  const char* title;
  const char* usage;
  const char* footer;
};

const CommandText& text_of(Command command);

// The command a word selects (report, snapshot, merge, diff, run); none for any other word.
std::optional<Command> command_named(const std::string& word);

// Every word that selects a command, `help` included: for "did you mean".
std::vector<std::string> command_words();

// "cuaudit 0.1.0 (commit ..., built with CUDA 13.0)".
std::string version_text();

}  // namespace cuaudit
