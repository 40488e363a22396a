// From a kept cubin to what a launch's misaligned word means: the cubin's kernels (the fixture
// compiled with nvcc -cubin -arch=sm_90 -O3 from tests/fixtures/sass-sm90-kernels.cu), the
// disassembler run on the one kernel asked about (a stand-in that prints the SASS nvdisasm printed
// for it on the H200), the judgement, the cache beside the trace, and what the report says when
// the toolkit or the code is missing.
#include <doctest/doctest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cubin_functions.h"
#include "fixture_file.h"
#include "kernel_access.h"
#include "run_dir.h"

using namespace cuaudit;

namespace {

const CubinFunction* function_named(const std::vector<CubinFunction>& functions, const std::string& name) {
  for (const CubinFunction& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// A run directory holding the fixture cubin as the injection keeps it, and a trace that says so.
struct RunWithCode {
  std::string dir;
  ProcessTrace trace;
  RunWithCode() {
    char path[] = "/tmp/cuaudit-kernel-access-XXXXXX";
    REQUIRE(mkdtemp(path) != nullptr);
    dir = path;
    REQUIRE(mkdir((dir + "/" + kKernelCodeDir).c_str(), 0700) == 0);
    const std::string image = fixture("sass-sm90-kernels.cubin");
    const uint64_t hash = trace::content_hash64(image.data(), image.size());
    std::ofstream(fmt_path(hash), std::ios::binary) << image;
    trace.module_code.push_back({hash, image.size(), 1, trace::ModuleCodeStatus::Saved});
    trace.kernels[1] = "_Z6scale4PKfPfi";
    trace.kernels[2] = "_Z7guardedPKfPfi";
    trace.kernels[3] = "_Z9by_params6Params";
    trace.kernels[4] = "not_in_any_cubin";
  }
  std::string fmt_path(uint64_t hash) const { return kept_module_code(dir, hash, false); }
  // The module as a fat binary instead, and a stand-in cuobjdump beside nvdisasm running `script`.
  // Returns the fat binary's path.
  std::string as_fatbin(const std::string& script) {
    const std::string kept = fmt_path(trace.module_code[0].hash);
    const std::string fatbin = kept.substr(0, kept.size() - 6) + ".fatbin";
    REQUIRE(rename(kept.c_str(), fatbin.c_str()) == 0);
    trace.module_code[0].status = trace::ModuleCodeStatus::SavedFatbin;
    std::ofstream(dir + "/cuobjdump") << "#!/bin/sh\n" << script << "\n";
    chmod((dir + "/cuobjdump").c_str(), 0755);
    return fatbin;
  }
  // A stand-in for nvdisasm: prints the SASS recorded on the H200 and notes its arguments.
  std::string fake_nvdisasm() const {
    const std::string script = dir + "/nvdisasm";
    std::ofstream(script) << "#!/bin/sh\necho \"$@\" >> '" << dir << "/nvdisasm.args'\ncat '" << CUAUDIT_TEST_FIXTURES
                          << "/sass-sm90-kernels.json'\n";
    chmod(script.c_str(), 0755);
    return script;
  }
};

LaunchParamFact low_bits(uint32_t kernel, uint32_t buffer_offset, uint64_t value) {
  LaunchParamFact f;
  f.kernel_id = kernel;
  f.buffer_offset = buffer_offset;
  f.value = value;
  f.problem = trace::LaunchProblem::LowBits;
  return f;
}

// The notes about the kernels' code: those about debug information (none in these synthetic
// traces, whose stacks name no object) are test_debug_types.cpp's.
std::vector<std::string> code_notes(const KernelRequirements& k) {
  std::vector<std::string> out;
  for (const std::string& note : k.notes()) {
    if (note.find("debug information") == std::string::npos) out.push_back(note);
  }
  return out;
}

// As the reader gives it to the judgement: a launch fact with its stack (none here).
Event event(const LaunchParamFact& fact) {
  Event e;
  e.kind = EventKind::LaunchParam;
  e.payload = fact;
  return e;
}

}  // namespace

TEST_CASE("a cubin's kernels: names, symbol indices for nvdisasm -fun, where parameters start") {
  const auto functions = cubin_functions(fixture("sass-sm90-kernels.cubin"));
  CHECK(functions.size() == 8);
  const CubinFunction* scale4 = function_named(functions, "_Z6scale4PKfPfi");
  REQUIRE(scale4);
  CHECK(scale4->symbol_index == 22);  // as readelf -s numbers it
  CHECK(scale4->param_base == 0x210);
  CHECK(function_named(functions, "plain_c"));
  CHECK(cubin_functions("not an ELF file").empty());
  CHECK(cubin_functions(std::string("\x7f"
                                    "ELF\x02\x01",
                                    6))
            .empty());  // cut short
}

TEST_CASE("a word the kernel's code reads 16 bytes at a time is misaligned, one it tests itself is not") {
  RunWithCode run;
  KernelRequirements code(run.dir, run.fake_nvdisasm());
  const auto judged = code.judge(run.trace, event(low_bits(1, 0, 0x7f0000000004)));
  REQUIRE(judged);
  CHECK(judged->problem == trace::LaunchProblem::Misaligned);
  CHECK(judged->alignment == 16);
  CHECK(judged->alignment_from == AlignmentSource::Code);
  CHECK_FALSE(code.judge(run.trace, event(low_bits(1, 16, 0x7f0000000004))));  // n: no access through it
  CHECK_FALSE(code.judge(run.trace, event(low_bits(2, 0, 0x7f0000000004))));   // guarded: checks its alignment
  // Params::idx is read as ints: 4 bytes in is fine, 2 bytes in is not.
  CHECK_FALSE(code.judge(run.trace, event(low_bits(3, 8, 0x7f0000000004))));
  const auto idx = code.judge(run.trace, event(low_bits(3, 8, 0x7f0000000002)));
  REQUIRE(idx);
  CHECK(idx->alignment == 4);
  // The disassembler ran once, on the process's kernels of that cubin alone (by symbol index).
  std::ifstream args(run.dir + "/nvdisasm.args");
  std::string line;
  REQUIRE(std::getline(args, line));
  CHECK(line.find("-json -fun ") == 0);
  for (const char* symbol : {"22", "18", "19"}) CHECK(line.find(symbol) != std::string::npos);
  CHECK_FALSE(std::getline(args, line));
  CHECK(code_notes(code).empty());  // kernel 4 has no code, but no judgement needed it
}

TEST_CASE("a word the kernel's code loads or stores through is dereferenced, one it never follows is not") {
  RunWithCode run;
  KernelRequirements code(run.dir, run.fake_nvdisasm());
  CHECK(code.dereferences(run.trace, event(low_bits(3, 8, 0x5555'0000'1000))));         // Params::idx, read as ints
  CHECK(code.dereferences(run.trace, event(low_bits(2, 0, 0x5555'0000'1000))));         // guarded: still read through
  CHECK_FALSE(code.dereferences(run.trace, event(low_bits(1, 16, 0x5555'0000'1000))));  // n: an int
  CHECK_FALSE(code.dereferences(run.trace, event(low_bits(4, 0, 0x5555'0000'1000))));   // no code: no evidence
  // As the replay gets them: a host-memory word kept, marked, only where the code reads through it;
  // a word the driver did not know (stale, or an integer) left to the replay as it is.
  LaunchParamFact host = low_bits(3, 8, 0x5555'0000'1000);
  host.word = host.host_readable = true;
  host.problem = trace::LaunchProblem::NotAccessible;
  const auto kept = code.judge_word(run.trace, event(host));
  REQUIRE(kept);
  CHECK(kept->code_dereferences);
  host.buffer_offset = 16;
  CHECK_FALSE(code.judge_word(run.trace, event(host)));
  LaunchParamFact unknown = host;
  unknown.host_readable = false;
  const auto as_is = code.judge_word(run.trace, event(unknown));
  REQUIRE(as_is);
  CHECK_FALSE(as_is->code_dereferences);
  CHECK(as_is->problem == trace::LaunchProblem::NotAccessible);
}

TEST_CASE("the cache beside the trace judges the run again without the toolkit or the code") {
  RunWithCode run;
  const std::string cache = run.dir + "/" + kKernelAccessCacheFile;
  std::string error;
  {
    KernelRequirements code(run.dir, run.fake_nvdisasm());
    REQUIRE(code.judge(run.trace, event(low_bits(1, 8, 0x7f0000000008))));
    CHECK(code.changed());
    REQUIRE(code.save_cache(cache, error));
  }
  REQUIRE(unlink(run.fmt_path(run.trace.module_code[0].hash).c_str()) == 0);
  KernelRequirements again(run.dir, "/nonexistent/nvdisasm");
  REQUIRE(again.load_cache(cache, error));
  const auto judged = again.judge(run.trace, event(low_bits(1, 8, 0x7f0000000008)));
  REQUIRE(judged);
  CHECK(judged->alignment == 16);
  CHECK_FALSE(again.changed());
  CHECK(code_notes(again).empty());
}

TEST_CASE("without nvdisasm or without a kernel's code nothing is guessed, and the report says so once") {
  RunWithCode run;
  KernelRequirements code(run.dir, "/nonexistent/nvdisasm");
  CHECK_FALSE(code.judge(run.trace, event(low_bits(1, 0, 0x7f0000000004))));
  CHECK_FALSE(code.judge(run.trace, event(low_bits(2, 0, 0x7f0000000004))));
  CHECK_FALSE(code.judge(run.trace, event(low_bits(4, 0, 0x7f0000000004))));
  const auto notes = code_notes(code);
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].find("nvdisasm (CUDA toolkit) was not found at /nonexistent/nvdisasm: 2 kernel(s)") == 0);
  CHECK(notes[1].find("the machine code of 1 kernel(s)") == 0);
  CHECK(notes[1].find("not_in_any_cubin") != std::string::npos);

  run.trace.module_code.push_back({0, 1 << 30, 2, trace::ModuleCodeStatus::OverLimit});
  KernelRequirements limited(run.dir, run.fake_nvdisasm());
  CHECK_FALSE(limited.judge(run.trace, event(low_bits(4, 0, 0x7f0000000004))));
  REQUIRE(code_notes(limited).size() == 1);
  CHECK(code_notes(limited)[0].find("over CUAUDIT_KERNEL_CODE_LIMIT_MB") != std::string::npos);
}

TEST_CASE("a fat binary's cubins are taken out once, by cuobjdump beside nvdisasm") {
  RunWithCode run;
  // A stand-in cuobjdump "extracts" the fixture cubin.
  const std::string fatbin = run.as_fatbin(std::string("echo \"$@\" >> '") + run.dir + "/cuobjdump.args'\ncp '" +
                                           CUAUDIT_TEST_FIXTURES + "/sass-sm90-kernels.cubin' app.1.sm_90.cubin");
  const std::string nvdisasm = run.fake_nvdisasm();
  KernelRequirements code(run.dir, nvdisasm);
  const auto judged = code.judge(run.trace, event(low_bits(1, 0, 0x7f0000000004)));
  REQUIRE(judged);
  CHECK(judged->alignment == 16);
  CHECK(code.judge(run.trace, event(low_bits(3, 0, 0x7f0000000004))));  // the same fat binary: not taken out again
  std::ifstream args(run.dir + "/cuobjdump.args");
  std::string line;
  REQUIRE(std::getline(args, line));
  CHECK(line == "-xelf all " + fatbin);
  CHECK_FALSE(std::getline(args, line));
  struct stat st;
  CHECK(stat((fatbin.substr(0, fatbin.size() - 7) + ".elf/app.1.sm_90.cubin").c_str(), &st) == 0);
  CHECK(code_notes(code).empty());
}

TEST_CASE("fat-binary extraction never writes where a planted link points") {
  char outside_path[] = "/tmp/cuaudit-outside-XXXXXX";
  REQUIRE(mkdtemp(outside_path) != nullptr);
  const std::string outside = outside_path;
  const std::string extract =
      std::string("cp '") + CUAUDIT_TEST_FIXTURES + "/sass-sm90-kernels.cubin' app.1.sm_90.cubin";
  auto outside_empty = [&] {
    DIR* d = opendir(outside.c_str());
    REQUIRE(d != nullptr);
    size_t n = 0;
    while (const dirent* e = readdir(d)) n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
    closedir(d);
    return n == 0;
  };
  SUBCASE("a link where the extracted directory goes") {
    RunWithCode run;
    const std::string fatbin = run.as_fatbin(extract);
    const std::string elf = fatbin.substr(0, fatbin.size() - 7) + ".elf";
    REQUIRE(symlink(outside.c_str(), elf.c_str()) == 0);
    KernelRequirements code(run.dir, run.fake_nvdisasm());
    CHECK_FALSE(code.judge(run.trace, event(low_bits(1, 0, 0x7f0000000004))));
    CHECK(outside_empty());
    CHECK(code_notes(code).back().find("not a directory (a link?)") != std::string::npos);
  }
  SUBCASE("a planted .partial link, as the old fixed name was") {
    RunWithCode run;
    const std::string fatbin = run.as_fatbin(extract);
    const std::string elf = fatbin.substr(0, fatbin.size() - 7) + ".elf";
    REQUIRE(symlink(outside.c_str(), (elf + ".partial").c_str()) == 0);
    KernelRequirements code(run.dir, run.fake_nvdisasm());
    CHECK(code.judge(run.trace, event(low_bits(1, 0, 0x7f0000000004))));  // extracted in a directory of its own
    CHECK(outside_empty());
    struct stat st;
    CHECK((lstat(elf.c_str(), &st) == 0 && S_ISDIR(st.st_mode)));
  }
  SUBCASE("kernel-code itself a link") {
    RunWithCode run;
    const std::string fatbin = run.as_fatbin(extract);
    const std::string folder = run.dir + "/" + kKernelCodeDir;
    const std::string moved = run.dir + "/real-kernel-code";
    REQUIRE(rename(folder.c_str(), moved.c_str()) == 0);
    REQUIRE(symlink(moved.c_str(), folder.c_str()) == 0);
    KernelRequirements code(run.dir, run.fake_nvdisasm());
    CHECK_FALSE(code.judge(run.trace, event(low_bits(1, 0, 0x7f0000000004))));
    DIR* d = opendir(moved.c_str());
    REQUIRE(d != nullptr);
    size_t elf_dirs = 0;
    while (const dirent* e = readdir(d)) elf_dirs += std::string(e->d_name).find(".elf") != std::string::npos;
    closedir(d);
    CHECK(elf_dirs == 0);
  }
  rmdir(outside.c_str());
}

TEST_CASE("a fat binary cuobjdump cannot open is said, with what cuobjdump said") {
  RunWithCode run;
  const std::string fatbin = run.as_fatbin("echo 'cuobjdump fatal: not a fat binary' >&2\nexit 3");
  const std::string nvdisasm = run.fake_nvdisasm();
  KernelRequirements code(run.dir, nvdisasm);
  CHECK_FALSE(code.judge(run.trace, event(low_bits(1, 0, 0x7f0000000004))));
  const auto notes = code_notes(code);
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].find("was not kept") != std::string::npos);  // no cubin holds the kernel
  CHECK(notes[1].find("the kernels of " + fatbin + " could not be read") == 0);
  CHECK(notes[1].find("failed (exit status 3): cuobjdump fatal: not a fat binary") != std::string::npos);
}

TEST_CASE("a damaged cache is refused with a reason") {
  RunWithCode run;
  const std::string cache = run.dir + "/" + kKernelAccessCacheFile;
  std::ofstream(cache) << "{\"schema\": \"something.else\"}";
  KernelRequirements code(run.dir, "");
  std::string error;
  CHECK_FALSE(code.load_cache(cache, error));
  CHECK(error.find("not a cuaudit kernel-access cache") != std::string::npos);
}

TEST_CASE("a pointer whose declared type already demands what the code needs is left to the type's check") {
  RunWithCode run;
  run.trace.kernels[5] = "plain_c";  // extern "C": no declared type, the code decides (8 for a double)
  run.trace.kernels[6] = "_Z1fPdi";  // f(double*, int): the target's type check reports a double* at +4
  run.trace.kernels[7] = "_Z1gPfi";  // g(float*, int), read 8 bytes at a time: the code demands more
  const std::string cache = run.dir + "/" + kKernelAccessCacheFile;
  std::ofstream(cache) << R"({"schema": "cuaudit.kernel-access.v1", "kernels": {
    "_Z1fPdi": {"cubin": "0", "params": {"0": {"width": 8, "guarded": false}}},
    "_Z1gPfi": {"cubin": "0", "params": {"0": {"width": 8, "guarded": false}}}}})";
  KernelRequirements code(run.dir, run.fake_nvdisasm());
  std::string error;
  REQUIRE(code.load_cache(cache, error));
  const auto untyped = code.judge(run.trace, event(low_bits(5, 0, 0x7f0000000004)));
  REQUIRE(untyped);
  CHECK(untyped->alignment == 8);
  CHECK_FALSE(code.judge(run.trace, event(low_bits(6, 0, 0x7f0000000004))));
  const auto wider = code.judge(run.trace, event(low_bits(7, 0, 0x7f0000000004)));
  REQUIRE(wider);
  CHECK(wider->alignment == 8);
}
