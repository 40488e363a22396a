#include "launch_findings.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "frame_filter.h"
#include "function_names.h"
#include "kernel_signature.h"
#include "ownership.h"
#include "pool_names.h"
#include "trace_format.h"

namespace cuaudit {
namespace {

using trace::LaunchProblem;

// Which finding a judged parameter makes, if any. An inaccessible value that is neither in freed
// memory nor readable host memory (an integer, IPC memory, another tool's) is not reported; a word
// of a by-value struct (it may be an integer that happens to look like an address) only when it
// lies in freed memory, or in host memory the kernel's code loads or stores through.
std::optional<report::FindingKind> kind_of(const LaunchParamJudgement& j) {
  const LaunchParamFact& fact = j.launch.launch_param();
  if (fact.problem == LaunchProblem::Misaligned) return report::FindingKind::MisalignedParam;
  if (fact.problem == LaunchProblem::PeerNotEnabled) return report::FindingKind::PeerPointerParam;
  if (j.live) return std::nullopt;  // tracked memory the driver did not describe: nothing to say
  if (j.freed) return report::FindingKind::StalePointerParam;
  if (fact.host_readable && (!fact.word || fact.code_dereferences)) return report::FindingKind::HostPointerParam;
  return std::nullopt;
}

// nvcc's host-side wrapper of a kernel has the kernel's name and sits at the kernel's definition;
// inlined into the caller it can survive the internal-frame filter. The <<<>>> line is below it.
void drop_kernel_wrapper(std::vector<report::Frame>& stack, const std::string& kernel) {
  const std::string bare = report::short_function_name(kernel);
  while (stack.size() > 1 && report::short_function_name(stack.front().function) == bare) stack.erase(stack.begin());
}

struct Group {
  const LaunchParamJudgement* first;
  report::FindingKind kind;
  uint64_t launches = 0;
};

std::string memory_of(const ProcessTrace& trace, const MemoryEvent& allocation) {
  if (owner_of_event(allocation, trace.pools).is_block()) {
    return fmt::format("{}-byte block of {} ({})", allocation.bytes, pool_description(trace.pools, allocation.pool),
                       api_info(allocation.api).name);
  }
  return fmt::format("{}-byte allocation of {} ({})", allocation.bytes,
                     family_description(api_info(allocation.api).family), api_info(allocation.api).name);
}

// Where the value points: "4 byte(s) into a 4096-byte allocation of device memory (cudaMalloc)".
std::string place_of(const ProcessTrace& trace, const LaunchParamJudgement& j) {
  return j.live    ? fmt::format(", {} byte(s) into a {}", j.offset, memory_of(trace, *j.live))
         : j.freed ? fmt::format(", {} byte(s) into a released {}", j.offset, memory_of(trace, *j.freed))
                   : std::string();
}

// The call that told the program of a misaligned access made by the launch at `seq`: the first
// later call that returned cudaErrorMisalignedAddress (716; CUDA_ERROR_MISALIGNED_ADDRESS in the
// driver), unless another launch the kernels' code cannot take came in between (that one is the
// likelier culprit). Null when no call after it failed so.
const Event* misaligned_fault_after(const ProcessTrace& trace, uint64_t seq) {
  constexpr int32_t kMisalignedAddress = 716;
  for (const Event& e : trace.events) {
    if (e.seq <= seq) continue;
    if (e.kind == EventKind::LaunchParam && e.launch_param().alignment_from != AlignmentSource::Type &&
        e.launch_param().problem == LaunchProblem::Misaligned)
      return nullptr;
    const auto* call = std::get_if<RuntimeCall>(&e.payload);
    if (call && call->result == kMisalignedAddress) return &e;
  }
  return nullptr;
}

const char* alignment_source_key(AlignmentSource source) {
  switch (source) {
    case AlignmentSource::Code:
      return "code";
    case AlignmentSource::DebugInfo:
      return "debug_info";
    case AlignmentSource::Type:
      break;
  }
  return "type";
}

// A misaligned value that the kernel's machine code (accesses `fact.alignment` bytes wide,
// LDG.E.128 and the like) or the pointee's declared alignment (__align__, alignas) cannot take.
void describe_code_requirement(const ProcessTrace& trace, const Event& e, const std::string& param,
                               const std::string& kernel, const LaunchParamJudgement& j, report::Finding& f) {
  const LaunchParamFact& fact = e.launch_param();
  const bool declared = fact.alignment_from == AlignmentSource::DebugInfo;
  const std::string pointee = declared && fact.declared_type && !fact.declared_type->empty()
                                  ? *fact.declared_type
                                  : std::string("its pointee type");
  const std::string why =
      declared ? fmt::format(" as {} is declared (the program's debug information)", pointee)
               : fmt::format(", and the kernel's code accesses {} bytes at a time through it", fact.alignment);
  f.headline =
      fmt::format("Misaligned kernel parameter: {} of {} is 0x{:x}{}, not {}-byte aligned{}; launched by {} at:", param,
                  kernel, fact.value, place_of(trace, j), fact.alignment, why, f.api);
  f.message = declared ? fmt::format(
                             "{} is declared with {}-byte alignment (__align__ or alignas), and {} of kernel {} points "
                             "to it; 0x{:x} is {} byte(s) past a multiple of {}: the compiler may access it {} bytes "
                             "at a time",
                             pointee, fact.alignment, param, kernel, fact.value, fact.value % fact.alignment,
                             fact.alignment, fact.alignment)
                       : fmt::format(
                             "kernel {} loads or stores {} bytes at a time through {} (its machine code says so: a "
                             "{}-bit access at that pointer plus whole multiples of {}); 0x{:x} is {} byte(s) past a "
                             "multiple of {}",
                             kernel, fact.alignment, param, fact.alignment * 8, fact.alignment, fact.value,
                             fact.value % fact.alignment, fact.alignment);
  if (declared) {
    f.notes.push_back(fmt::format(
        "an object of a type declared {}-byte aligned must start at a multiple of {}: the compiler may load and store "
        "it {} bytes at a time wherever it is used, and this value breaks that; offset the pointer by whole {}s",
        fact.alignment, fact.alignment, fact.alignment, pointee));
    return;
  }
  if (const Event* fault = misaligned_fault_after(trace, e.seq)) {
    f.notes.push_back(fmt::format(
        "this launch faulted: {} after it returned cudaErrorMisalignedAddress (the context is lost from then on)",
        event_api_name(trace, *fault)));
  } else {
    f.notes.push_back(
        "no later call returned cudaErrorMisalignedAddress: no thread reached that access in this run (the launch "
        "had no work for it), so the bug is latent; the launch faults as soon as it has work");
  }
  f.notes.push_back(
      "offset the pointer by whole vectors, or have the kernel test the pointer's alignment and take a scalar path "
      "when it is not aligned");
}

// How the finding's sentences name the parameter, the kernel and the launches.
struct ParamWords {
  std::string type;      // from the kernel's mangled name; empty when it says none
  std::string param;     // "parameter 1 (float4*)", "the 8 bytes at offset 8 of parameter 0 (Args)"
  std::string kernel;    // as reports show it
  std::string launches;  // " in 3 launches", or empty
};

void describe_misaligned_by_type(const ProcessTrace& trace, const LaunchParamJudgement& j, const ParamWords& w,
                                 report::Finding& f) {
  const LaunchParamFact& fact = j.launch.launch_param();
  f.headline = fmt::format(
      "Misaligned kernel parameter: {} of {} is 0x{:x}{}, not {}-byte aligned{}; launched by {} at:", w.param, w.kernel,
      fact.value, place_of(trace, j), fact.alignment, w.launches, f.api);
  f.message = fmt::format(
      "{} of kernel {} must be {}-byte aligned for its type; 0x{:x} is {} byte(s) past a multiple "
      "of {}",
      w.param, w.kernel, fact.alignment, fact.value, fact.value % fact.alignment, fact.alignment);
  f.notes.push_back(
      "a vector load through it faults (misaligned address) or, in code that does not fault, reads "
      "the wrong elements; offset the pointer by whole vectors, or use the scalar type");
}

void describe_stale(const ProcessTrace& trace, const LaunchParamJudgement& j, const ParamWords& w, report::Finding& f) {
  const LaunchParamFact& fact = j.launch.launch_param();
  f.bytes = j.freed->bytes;
  f.headline = fmt::format(
      "Stale pointer kernel parameter: {} of {} is 0x{:x}, {} byte(s) into a {} already "
      "released by {}{}; launched by {} at:",
      w.param, w.kernel, fact.value, j.offset, memory_of(trace, *j.freed), api_info(j.release->api).name, w.launches,
      f.api);
  f.message =
      fmt::format("{} of kernel {} points into memory released before the launch (use after free)", w.param, w.kernel);
  if (fact.word) {
    f.notes.push_back(
        "the kernel's name does not say these 8 bytes are a pointer; their value lies in memory the program "
        "released before the launch, so the kernel reads or writes freed memory if it uses them as one");
  }
  if (owner_of_event(*j.freed, trace.pools).is_block()) {
    f.notes.push_back(
        "the pool took this block back: its memory is still the pool's, so the kernel neither faults nor warns, "
        "and it reads or overwrites whatever block the pool hands out there next");
  }
}

void describe_peer(const ProcessTrace& trace, const LaunchParamJudgement& j, const ParamWords& w, report::Finding& f) {
  const LaunchParamFact& fact = j.launch.launch_param();
  const std::string memory =
      j.live ? fmt::format(", {} byte(s) into a {}", j.offset, memory_of(trace, *j.live)) : std::string();
  f.headline = fmt::format(
      "Peer pointer kernel parameter: {} of {} is 0x{:x}{} on device {}; the kernel runs on device {}, which "
      "was given no access to it{}; launched by {} at:",
      w.param, w.kernel, fact.value, memory, fact.pointer_device, fact.launch_device, w.launches, f.api);
  f.message = fmt::format(
      "{} of kernel {} points into memory of device {}, but the kernel runs on device {} and peer access from "
      "device {} to device {} was not enabled",
      w.param, w.kernel, fact.pointer_device, fact.launch_device, fact.launch_device, fact.pointer_device);
  f.notes.push_back(fmt::format(
      "enable peer access first (cudaSetDevice({}); cudaDeviceEnablePeerAccess({}, 0)), or copy the data to device "
      "{} (cudaMemcpyPeer); without it the kernel faults with an illegal address",
      fact.launch_device, fact.pointer_device, fact.launch_device));
  f.device = fact.launch_device;
}

void describe_host_pointer(const LaunchParamJudgement& j, const ParamWords& w, report::Finding& f) {
  const LaunchParamFact& fact = j.launch.launch_param();
  f.headline = fmt::format(
      "Host pointer kernel parameter: {} of {} is 0x{:x}, pageable host memory (not pinned, "
      "registered or managed){}; launched by {} at:",
      w.param, w.kernel, fact.value, w.launches, f.api);
  f.message = fmt::format(
      "{} of kernel {} points into pageable host memory, which the device cannot access "
      "(except on systems with HMM or ATS)",
      w.param, w.kernel);
  if (fact.code_dereferences) {
    f.notes.push_back(
        "the kernel's name does not say these 8 bytes are a pointer; its machine code loads or stores through "
        "them");
  }
  f.notes.push_back(
      "copy the data to device memory first (cudaMemcpy), or allocate it with cudaMallocHost, "
      "cudaMallocManaged or cudaHostRegister");
}

// The release and the allocation the pointer was into, when known.
void add_memory_stacks(const Group& g, StackResolver& stacks, report::Finding& f) {
  const LaunchParamJudgement& j = *g.first;
  if (j.freed && j.release) {
    f.related.push_back({report::RelatedRole::Release, std::string(api_info(j.release->api).name),
                         fmt::format("released by {} at:", api_info(j.release->api).name),
                         stacks.user_stack(j.release->stack_id)});
  }
  const MemoryEvent* allocation = j.live ? &*j.live : j.freed ? &*j.freed : nullptr;
  if (allocation) {
    f.related.push_back({report::RelatedRole::Allocation, std::string(api_info(allocation->api).name),
                         fmt::format("allocated by {} at:", api_info(allocation->api).name),
                         stacks.user_stack(allocation->stack_id)});
    if (allocation->device >= 0 && g.kind != report::FindingKind::PeerPointerParam) f.device = allocation->device;
  }
}

ParamWords words_of(const Group& g, const std::string& name) {
  const LaunchParamFact& fact = g.first->launch.launch_param();
  ParamWords w;
  w.kernel = kernel_display_name(name);
  w.type = kernel_param_type(name, fact.param_index);
  const std::string& type = w.type;
  w.param = type.empty() ? fmt::format("parameter {}", fact.param_index)
                         : fmt::format("parameter {} ({})", fact.param_index, type);
  // A pointer inside a by-value struct: its place in the struct.
  const bool member = fact.member_offset != 0 || (!type.empty() && type.back() != '*');
  if (member) w.param = fmt::format("the 8 bytes at offset {} of {}", fact.member_offset, w.param);
  // A word's facts are kept once per launch site (launch_checker.cpp): no launch count to give.
  if (g.launches > 1 && !fact.word) w.launches = fmt::format(" in {} launches", g.launches);
  return w;
}

report::Finding describe(const ProcessTrace& trace, const Group& g, StackResolver& stacks) {
  const LaunchParamJudgement& j = *g.first;
  const Event& e = j.launch;
  const LaunchParamFact& fact = e.launch_param();
  auto name_it = trace.kernels.find(fact.kernel_id);
  const std::string name = name_it == trace.kernels.end() ? std::string("?") : name_it->second;
  const ParamWords w = words_of(g, name);

  report::Finding f;
  f.kind = g.kind;
  f.severity = report::Severity::Error;
  const char* path = trace::launch_path_name(fact.path);
  f.api = path ? path : "a kernel launch";
  f.count = g.launches;
  f.pid = trace.pid;
  f.address = fact.value;
  f.stack = stacks.user_stack(e.stack_id);
  drop_kernel_wrapper(f.stack, w.kernel);
  f.parameter = report::KernelParameter{w.kernel,
                                        fact.param_index,
                                        w.type,
                                        fact.alignment,
                                        {},
                                        fact.member_offset,
                                        fact.alignment ? alignment_source_key(fact.alignment_from) : std::string()};
  if (j.live || j.freed) f.parameter->offset = j.offset;
  switch (g.kind) {
    case report::FindingKind::MisalignedParam:
      // Only the first launch per site and low bits is recorded: no launch count to give.
      if (fact.alignment_from != AlignmentSource::Type) {
        describe_code_requirement(trace, e, w.param, w.kernel, j, f);
      } else {
        describe_misaligned_by_type(trace, j, w, f);
      }
      break;
    case report::FindingKind::StalePointerParam:
      describe_stale(trace, j, w, f);
      break;
    case report::FindingKind::PeerPointerParam:
      describe_peer(trace, j, w, f);
      break;
    default:
      describe_host_pointer(j, w, f);
      break;
  }
  add_memory_stacks(g, stacks, f);
  return f;
}

}  // namespace

std::vector<report::Finding> launch_findings(const ProcessTrace& trace, const std::vector<LaunchParamJudgement>& judged,
                                             StackResolver& stacks) {
  // Same launch stack, same kernel (by name: one kernel may have several handles), same
  // parameter, same kind: one finding counting its launches.
  // The launch stack by its user frames: the first launch of a kernel can come through CUDA's
  // lazy-loading path, another raw stack with the same user frames.
  std::map<std::tuple<std::vector<uint64_t>, std::string, uint32_t, report::FindingKind>, Group> groups;
  std::vector<decltype(groups)::key_type> order;
  for (const LaunchParamJudgement& j : judged) {
    const auto kind = kind_of(j);
    if (!kind) continue;
    const LaunchParamFact& fact = j.launch.launch_param();
    auto name = trace.kernels.find(fact.kernel_id);
    std::vector<uint64_t> user_frames;
    for (const RawFrame& frame : stacks.user_raw_frames(j.launch.stack_id)) user_frames.push_back(frame.address);
    if (user_frames.empty()) user_frames.push_back(j.launch.stack_id);  // no frames known: the stack itself
    const auto key = std::make_tuple(std::move(user_frames), name == trace.kernels.end() ? std::string() : name->second,
                                     uint32_t{fact.param_index} << 16 | fact.member_offset, *kind);
    auto [it, inserted] = groups.try_emplace(key, Group{&j, *kind});
    if (inserted) order.push_back(key);
    ++it->second.launches;
  }
  std::vector<report::Finding> findings;
  for (const auto& key : order) findings.push_back(describe(trace, groups.at(key), stacks));
  return findings;
}

}  // namespace cuaudit
