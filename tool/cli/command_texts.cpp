#include "command_texts.h"

#include "build_info.h"

#ifndef CUAUDIT_VERSION
#define CUAUDIT_VERSION "unknown"
#endif

namespace cuaudit {
namespace {

constexpr const char* kRunUsage =
    "Usage: cuaudit [options] [--] program [args...]\n"
    "       cuaudit run [options] [--] program [args...]\n"
    "       cuaudit report [options] RUN_DIR\n"
    "       cuaudit snapshot [options] RUN_DIR|PID\n"
    "       cuaudit merge [options] REPORT...\n"
    "       cuaudit diff [options] OLD NEW\n"
    "       cuaudit suppressions import FILE.xml\n";

constexpr const char* kRunFooter =
    "Commands:\n"
    "  run      run the program under cuaudit and report (the default)\n"
    "  report   analyze a run saved with --save or --output again (no GPU needed)\n"
    "  snapshot the report as of now of a program still running under cuaudit (its run directory or pid),\n"
    "           without stopping it: what is live by site, growth so far, the timeline so far\n"
    "  merge    one report from the per-rank reports of an MPI or Slurm job\n"
    "  diff     compare two JSON reports: new, still present and fixed findings\n"
    "  suppressions import\n"
    "           compute-sanitizer's saved records (--xml yes --save FILE) as cuaudit suppressions\n"
    "Run `cuaudit COMMAND --help` for a command's options.\n\n"
    "Defaults: options in the nearest .cuauditrc from the working directory up, then in CUAUDIT_OPTIONS\n"
    "(for example \"--error-exitcode 1 --suppressions ci.supp\"), come before the command line's, which\n"
    "override them.\n\n"
    "Exit status: the program's own status when nothing is found; --error-exitcode N when findings exist;\n"
    "122 when nothing could be tracked; 123 when part of the run could not be read; 125 when cuaudit\n"
    "itself failed; 126/127 when the program cannot be executed or found; 2 for a bad command line.\n"
    "See docs/EXIT_CODES.md.";

constexpr const char* kReportFooter =
    "Options also come from .cuauditrc and CUAUDIT_OPTIONS; the command line's override them.\n\n"
    "Exit status: 0 when nothing is found; --error-exitcode N when findings exist; 122 when the run\n"
    "tracked nothing; 123 when part of the run could not be read; 125 when cuaudit itself failed; 2 for\n"
    "a bad command line. See docs/EXIT_CODES.md.";

constexpr const char* kMergeFooter =
    "Exit status: 0, or --error-exitcode N when the merged report has errors; 123 when a rank's report is\n"
    "incomplete; 125 when a report cannot be read; 2 for a bad command line. See docs/EXIT_CODES.md.";

constexpr const char* kDiffFooter =
    "Exit status: 0, or --error-exitcode N when the new report has errors the old one did not; 123 when\n"
    "either report is incomplete; 125 when a report cannot be read; 2 for a bad command line.\n"
    "See docs/EXIT_CODES.md.";

constexpr const char* kSuppressionsFooter =
    "The rules go to standard output (`> FILE.supp`, then --suppressions FILE.supp); what had no\n"
    "counterpart in cuaudit is listed in it as comments. See docs/SUPPRESSIONS.md.\n\n"
    "Exit status: 0; 2 for a bad command line or a file that is not compute-sanitizer's XML.";

constexpr CommandText kCommands[] = {
    {Command::Snapshot, "snapshot", "cuaudit snapshot",
     "cuaudit snapshot: the report as of now of a program running under cuaudit, without stopping it",
     "Usage: cuaudit snapshot [options] RUN_DIR|PID\n", kReportFooter},
    {Command::Report, "report", "cuaudit report",
     "cuaudit report: analyze a recorded run directory again (no GPU needed)",
     "Usage: cuaudit report [options] RUN_DIR\n", kReportFooter},
    {Command::Merge, "merge", "cuaudit merge",
     "cuaudit merge: one report from the per-rank reports of an MPI or Slurm job",
     "Usage: cuaudit merge [options] REPORT...\n", kMergeFooter},
    {Command::Diff, "diff", "cuaudit diff",
     "cuaudit diff: compare two JSON reports: new, still present and fixed findings",
     "Usage: cuaudit diff [options] OLD NEW\n", kDiffFooter},
    {Command::Suppressions, "suppressions", "cuaudit suppressions",
     "cuaudit suppressions: cuaudit suppressions from compute-sanitizer's XML records",
     "Usage: cuaudit suppressions import FILE.xml\n", kSuppressionsFooter},
    {Command::Run, "run", "cuaudit", "cuaudit: find CUDA memory leaks and misuse in a program", kRunUsage, kRunFooter},
};

}  // namespace

const CommandText& text_of(Command command) {
  for (const CommandText& c : kCommands) {
    if (c.command == command) return c;
  }
  return kCommands[sizeof kCommands / sizeof kCommands[0] - 1];
}

std::optional<Command> command_named(const std::string& word) {
  for (const CommandText& c : kCommands) {
    if (word == c.word) return c.command;
  }
  return std::nullopt;
}

std::vector<std::string> command_words() {
  std::vector<std::string> words;
  for (const CommandText& c : kCommands) words.push_back(c.word);
  words.push_back("help");
  return words;
}

std::string version_text() {
  return std::string("cuaudit ") + CUAUDIT_VERSION + " (commit " + CUAUDIT_GIT_COMMIT + ", built with CUDA " +
         CUAUDIT_CUDA_VERSION + ")";
}

}  // namespace cuaudit
