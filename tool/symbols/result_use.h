// Did the program look at what a call returned? Decided from the machine code at the call's
// return address in the module file (x86-64): the result is in eax; following every path from
// there, it is read (used), overwritten or clobbered by a call before any read (discarded),
// handed to this function's own caller by a return (returned), or the code cannot be followed
// (unknown: an indirect jump, an instruction the disassembler does not know, a budget exhausted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trace_model.h"

namespace cuaudit {

enum class ResultUse { Used, Discarded, Returned, Unknown };
const char* result_use_name(ResultUse r);

// Analyzes `code`, which holds the bytes at virtual address `base`, starting at `start`.
ResultUse analyze_result_use(const uint8_t* code, size_t size, uint64_t base, uint64_t start);

// One frame of a recorded stack, as the judge needs it.
struct RawFrame {
  uint64_t address;  // return address
  const ModuleInfo* module;
};

// Verdicts per call site, from the module files, cached beside the trace (call_sites.json) so a
// run reads the same where the binaries are gone.
class CallSiteJudge {
 public:
  CallSiteJudge();
  ~CallSiteJudge();
  CallSiteJudge(const CallSiteJudge&) = delete;
  CallSiteJudge& operator=(const CallSiteJudge&) = delete;

  bool load_cache(const std::string& path, std::string& error);
  bool save_cache(const std::string& path, std::string& error) const;

  // The verdict at one return address.
  ResultUse at(const RawFrame& frame);

  // The verdict for a call whose user frames (innermost first) are `frames`: a function that
  // only returns the result hands the question to its caller.
  ResultUse for_call(const std::vector<RawFrame>& frames);

  // Loads a module's executable segments (exposed for tests that judge their own code).
  struct ModuleCode;

 private:
  const ModuleCode* code_of(const ModuleInfo& module);

  std::map<std::string, std::map<uint64_t, ResultUse>> cache_;  // module key -> offset -> verdict
  std::map<std::string, std::unique_ptr<ModuleCode>> code_;     // module path -> code
};

}  // namespace cuaudit
