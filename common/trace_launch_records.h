// The trace's records of kernels and their launches (trace_format.h): kernel names, launch
// parameters that failed a check, the words whose low bits the tool compares with kernel code,
// modules' code and the names of callbacks.
#pragma once

#include <cstdint>

#include "trace_framing.h"

namespace cuaudit::trace {

// Followed by name_bytes of the kernel's name as the driver gives it (mangled for C++ kernels).
struct KernelRecord {
  RecordHeader header;
  uint32_t kernel_id;  // this process's number for the kernel, from 1
  uint32_t name_bytes;
};

// How a kernel's parameters reached CUDA: declared in launch_paths.inc with the names reports use.
enum class LaunchPath : uint8_t {
#define CUAUDIT_LAUNCH_PATH(id, number, name) id = number,
#include "launch_paths.inc"
#undef CUAUDIT_LAUNCH_PATH
};

// The name reports give a launch path ("cudaLaunchKernel", "a kernel node added to a graph");
// null for a number this build does not know.
const char* launch_path_name(uint8_t path) noexcept;

enum class LaunchProblem : uint8_t {
  Misaligned = 1,      // value % alignment != 0
  NotAccessible = 2,   // the driver knows no device-accessible memory at the value (freed, pageable, garbage)
  PeerNotEnabled = 3,  // memory of another device that the launching device was given no access to
  ReturnedToPool = 4,  // inside a block an NVTX-annotated pool took back (its memory is still the pool's)
  // A LaunchBits record (not a LaunchParam one) whose problem is 0: a pointer-like value not
  // 16-byte aligned, which the tool compares with what the kernel's code requires of it.
  LowBits = 5,
};

// One parameter of one launch that failed a check made in the target. The tool judges what an
// inaccessible value is (freed memory, pageable host memory, or nothing it can tell).
struct LaunchParamRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t stack_id;
  uint64_t value;  // the pointer as passed
  uint32_t tid;
  uint32_t kernel_id;
  uint32_t alignment;  // required by the parameter's type; 0: unknown (untyped kernel, unknown type)
  uint16_t param_index;
  uint8_t problem;        // LaunchProblem
  uint8_t path;           // LaunchPath
  int32_t driver_result;  // NotAccessible: what cuPointerGetAttributes returned
  uint8_t memory_type;    // NotAccessible: CU_POINTER_ATTRIBUTE_MEMORY_TYPE (0: none)
  uint8_t host_readable;  // NotAccessible: 1 when the process can read the address (host memory)
  int8_t pointer_device;  // PeerNotEnabled: the device the memory is on
  int8_t launch_device;   // PeerNotEnabled: the device the kernel runs on
};

// A word of a kernel's parameters where a pointer may be, whose value
// - problem 0: lies in the range of addresses CUDA handed out and is not 16-byte aligned, the
//   first time its kernel saw these low bits at this word from this launch stack (stacks are
//   walked for every such launch at first, then for a sample: launch_checker.cpp). Whether the
//   kernel needs it aligned is for the tool to judge, from the kernel's machine code
//   (ModuleCode); the target cannot tell a pointer from an integer, nor a float* from one the
//   kernel reads as float4; or
// - problem NotAccessible or ReturnedToPool (a word no typed check covers: a by-value struct's):
//   lies in that range and is no memory the driver knows, or in a block a pool took back; or,
//   outside that range, is host memory the process can read and the driver does not know
//   (host_readable). Sampled and kept once per launch site like the low bits. The word may be an
//   integer: the tool reports it only where the value lies in memory the program released, or in
//   host memory the kernel's code reads through.
struct LaunchBitsRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t stack_id;
  uint64_t value;  // the word as passed
  uint32_t tid;
  uint32_t kernel_id;
  uint32_t buffer_offset;  // where the word is in the kernel's parameter buffer
  uint16_t param_index;    // the parameter it belongs to
  uint16_t member_offset;  // where it is inside that parameter (0 for a pointer parameter)
  uint8_t path;            // LaunchPath
  uint8_t problem;         // 0 (low bits), or LaunchProblem::NotAccessible or ReturnedToPool (version 4 on)
  uint8_t memory_type;     // NotAccessible: CU_POINTER_ATTRIBUTE_MEMORY_TYPE (0: none)
  uint8_t host_readable;   // NotAccessible: 1 when the process can read the address (host memory)
  int32_t driver_result;   // NotAccessible: what cuPointerGetAttributes returned
};

// What became of the machine code of one module CUDA loaded (CUPTI's module-loaded callback).
enum class ModuleCodeStatus : uint32_t {
  Saved = 1,        // an ELF cubin, written as kernel-code/<hash>.cubin beside the trace (or already there)
  NotCode = 2,      // the driver handed over neither a cubin nor a fatbin
  OverLimit = 3,    // CUAUDIT_KERNEL_CODE_LIMIT_MB was reached: not written
  WriteFailed = 4,  // the file could not be written
  SavedFatbin = 5,  // a fat binary (cubins for several GPUs, maybe compressed): kernel-code/<hash>.fatbin
};
inline constexpr uint32_t kFatbinMagic = 0xba55ed50;  // the first word of a fat binary's header
struct ModuleCodeRecord {
  RecordHeader header;
  uint64_t seq;
  uint64_t time_ns;
  uint64_t hash;       // of the cubin's bytes: its file name, as 16 hex digits
  uint64_t bytes;      // the cubin's size
  uint32_t module_id;  // CUPTI's id of the module
  uint32_t status;     // ModuleCodeStatus
};

// Followed by name_bytes of the callback's name as CUPTI gives it ("cudaMemcpy_v3020"), no NUL.
struct CallbackNameRecord {
  RecordHeader header;
  uint32_t domain;
  uint32_t cbid;
  uint32_t name_bytes;
  uint32_t reserved;
};

}  // namespace cuaudit::trace
