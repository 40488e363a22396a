// How the command line speaks to its user: the usage line, each option's placeholder as its help
// names it, and "did you mean" for an option it does not know.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace cuaudit {

// CLI11 2.1 prints "Usage: NAME [OPTIONS]"; cuaudit's usage names the program and the commands.
class UsageFormatter : public CLI::Formatter {
 public:
  explicit UsageFormatter(std::string usage) : usage_(std::move(usage)) {}
  std::string make_usage(const CLI::App*, std::string) const override { return usage_; }

 private:
  std::string usage_;
};

// Every long and short option name the command takes, as typed.
std::vector<std::string> option_names(const CLI::App& app);

// "unknown option --leak-chek (did you mean --leak-check?)"
std::string unknown_option_message(const CLI::App& app, const std::string& arg);

// Each option's placeholder as its help names it ("write ... to FILE", "at most N"), not CLI11's
// TEXT or UINT; choices keep their list of words.
void name_placeholders(CLI::App& app);

}  // namespace cuaudit
