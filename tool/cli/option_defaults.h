// The options a project or a CI job sets once, before the command line's: the project's options
// file (.cuauditrc in the working directory or the nearest directory above it, as valgrind reads
// ./.valgrindrc) and then CUAUDIT_OPTIONS; the command line's words come last and override both.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cuaudit {

struct DefaultOptions {
  std::string file;                           // the options file read; empty when none
  std::vector<std::string> from_file;         // its words
  std::vector<std::string> from_environment;  // CUAUDIT_OPTIONS's words
  std::vector<std::string> warnings;          // a file passed over (not the user's, or writable by others)
};

// The options file found from the working directory up (CUAUDIT_OPTIONS_FILE=PATH names one
// instead, empty: none) and CUAUDIT_OPTIONS, as words. Throws std::invalid_argument naming where
// the words that cannot be read came from.
DefaultOptions read_default_options();

// The defaults' words, file first, that `command` takes: all of them (run, report, snapshot), or,
// with `every` (an app with every option of run and report), only those `command` knows (merge
// and diff take --error-exitcode from a CI job's defaults, not --suppressions). Warnings printed.
std::vector<std::string> default_words(const DefaultOptions& defaults, const CLI::App& command, const CLI::App* every);

// The options file from `directory` up: the nearest `.cuauditrc`; empty when none.
std::string find_options_file(const std::string& directory);

// The words of `words` that `command` takes (each option with its value), for the commands that
// take fewer options than run and report (merge, diff): `every` tells options of any command
// apart from their values.
std::vector<std::string> words_taken_by(const CLI::App& command, const CLI::App& every,
                                        const std::vector<std::string>& words);

}  // namespace cuaudit
