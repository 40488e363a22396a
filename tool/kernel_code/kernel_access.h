// What kernels' machine code requires of the words of their parameters, for the launch facts that
// need it (LaunchProblem::LowBits: a pointer-like word not 16-byte aligned). The code is what the
// injection kept (kernel-code/<hash>.cubin, or a fat binary whose cubins the toolkit's cuobjdump
// takes out once); the CUDA toolkit's nvdisasm disassembles the one
// kernel asked about, and sass_access.h reads its accesses. Results are cached per kernel beside
// the trace (kernel-access.json), so a recorded run is judged the same on a machine without the
// toolkit (CI replaying a golden run). Without nvdisasm, or without a kernel's code, the check is
// skipped and the report says so once. The type a pointer's declared pointee has (debug
// information: declared_types.h) may require more than the code shows.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "declared_types.h"
#include "sass_access.h"
#include "trace_model.h"

namespace cuaudit {

class KernelRequirements {
 public:
  // `nvdisasm`: the program to run (--nvdisasm); empty: CUAUDIT_NVDISASM, then PATH, then
  // $CUDA_HOME/bin and /usr/local/cuda/bin.
  KernelRequirements(std::string run_dir, std::string nvdisasm);

  // Which kernels (by the name the driver gave them) a run's report is about (--kernel-name).
  using KernelSelection = std::function<bool(const std::string& kernel)>;

  // The enrichment stage: reads the code of every kernel of `trace` that has launch facts and is
  // `selected`, at once (each kept cubin once, nvdisasm once per cubin, side by side), before the
  // replay; the judgements below then only look up. A process not prepared is read at its first
  // judgement, every kernel of it.
  void prepare(const ProcessTrace& trace, const KernelSelection& selected);

  // A missing file is not an error; false with `error` when the file cannot be used.
  bool load_cache(const std::string& path, std::string& error);
  bool save_cache(const std::string& path, std::string& error) const;
  bool changed() const { return changed_ || declared_.changed(); }

  // A LowBits fact (the payload of `low_bits`) judged: a Misaligned one with the alignment the
  // kernel's code or the pointer's declared type requires, whichever is more, or nothing (neither
  // requires anything the value breaks, or neither is known).
  std::optional<LaunchParamFact> judge(const ProcessTrace& trace, const Event& low_bits);

  // Whether the kernel's code loads or stores through the word of a LaunchBits fact (the payload
  // of `word`); false when its code is not known or the analysis could not follow it.
  bool dereferences(const ProcessTrace& trace, const Event& word);

  // Any LaunchBits fact (`word`) as the replay should see it: a LowBits one judged (above), one in
  // host memory only where the kernel's code reads through the word (marked so), others as they
  // are (the replay judges a stale one); nothing where the kernel's code clears it.
  std::optional<LaunchParamFact> judge_word(const ProcessTrace& trace, const Event& word);

  // What could not be checked, said once for the whole report.
  std::vector<std::string> notes() const;

 private:
  struct Kernel {
    std::string cubin;                       // hash of the cubin it came from, as its file name has it
    std::map<uint32_t, ParamAccess> params;  // offset in the parameter buffer -> what its code does
  };
  // What `kernel` (its name as the driver gave it) requires of the word at `buffer_offset` of its
  // parameters; nullopt when its code is not known (not kept, no nvdisasm, not readable).
  std::optional<ParamAccess> at(const ProcessTrace& trace, const std::string& kernel, uint32_t buffer_offset);
  void analyze_all(const ProcessTrace& trace, const KernelSelection& selected);
  bool find_nvdisasm();
  std::vector<std::string> extract(const std::string& fatbin);

  std::string run_dir_;
  std::string nvdisasm_;
  std::optional<bool> nvdisasm_found_;
  std::map<std::string, Kernel> kernels_;      // by name: the cache
  std::map<std::string, std::string> failed_;  // kernel (or fat binary) -> why its code could not be read
  std::set<std::string> without_code_;         // kernels whose code no kept cubin holds
  std::set<std::string> without_nvdisasm_;     // kernels that needed nvdisasm where there is none
  std::set<std::string> modules_not_kept_;     // reasons modules' code was not kept
  std::set<const ProcessTrace*> analyzed_;     // processes whose kernels were analyzed
  std::set<std::string> asked_;                // kernels a judgement needed: the notes are about these
  DeclaredTypes declared_;                     // what the program's debug information declares
  bool changed_ = false;
};

}  // namespace cuaudit
