#include "launch_checker.h"

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "clean_launches.h"
#include "driver_api.h"
#include "environment.h"
#include "event_clock.h"
#include "in_target_log.h"
#include "kernel_signature.h"
#include "launch_recorder.h"
#include "pointer_reachability.h"
#include "pool_recorder.h"
#include "readable_memory.h"
#include "stack_capture.h"
#include "stage_stats.h"

namespace cuaudit::inject {
namespace {

// What the checks cost, for CUAUDIT_STATS=1 (benchmarks): the slow paths only.
struct Stats {
  std::atomic<uint64_t> kernels{0};
  std::atomic<uint64_t> name_compares{0};  // a known handle came with another name pointer
  std::atomic<uint64_t> clean_repeats{0};  // arguments found clean before: not checked again
};
Stats g_stats;

// One parameter to check: where its value is and what its type demands.
struct ParamCheck {
  uint16_t index;
  uint16_t reserved;
  uint32_t offset;     // in the packed argument buffer (CU_LAUNCH_PARAM_BUFFER_POINTER launches)
  uint32_t alignment;  // 0: not checked (unknown pointee, untyped kernel)
};

// One 8-byte word of the parameters whose low bits are watched (kernel-access checks): each word
// of a pointer-sized parameter or of a by-value struct, where a pointer may be.
struct WordCheck {
  uint32_t buffer_offset;  // in the parameter buffer
  uint16_t param_index;
  uint16_t member_offset;  // inside its parameter
  bool typed_pointer;      // a pointer parameter whose reachability the typed checks already ask
};
// Words watched per kernel: 512 bytes of parameters (PyTorch's elementwise kernels take a few
// hundred); words past them are not watched.
constexpr uint16_t kMaxWatchedWords = 64;

// What cuaudit knows of one kernel handle. Immortal once published.
struct KernelInfo {
  const void* handle;
  const char* name_seen;  // the name pointer the driver gave: usually the same on every launch
  char* name;             // our copy, to tell a reloaded module's kernel at a recycled handle
  uint32_t id;
  std::atomic<bool> recorded;  // its Kernel record is in the trace
  bool has_offsets;
  uint16_t check_count;
  uint16_t word_count;
  ParamCheck checks[kMaxKernelParams];
  WordCheck words[kMaxWatchedWords];
  // Launches that brought each word a value worth a record (sampling: look_this_time).
  std::atomic<uint32_t> unaligned_launches[kMaxWatchedWords];    // not 16-byte aligned
  std::atomic<uint32_t> unreachable_launches[kMaxWatchedWords];  // in the handed-out range, unreachable
  std::atomic<uint32_t> host_launches[kMaxWatchedWords];         // outside it, where host memory may be
  std::atomic<uint64_t> host_value_asked[kMaxWatchedWords];      // the last such value asked about
};

constexpr size_t kKernelSlots = 1 << 14;  // open addressing; PyTorch loads thousands of kernels
std::atomic<KernelInfo*> g_kernels[kKernelSlots];
std::atomic<bool> g_insert_lock{false};

bool same_kernel(const KernelInfo* k, const void* handle, const char* name) noexcept {
  if (k->handle != handle) return false;
  if (!name || name == k->name_seen) return true;
  g_stats.name_compares.fetch_add(1, std::memory_order_relaxed);
  return k->name && strcmp(k->name, name) == 0;
}

size_t slot_of(const void* handle) noexcept {
  auto h = reinterpret_cast<uintptr_t>(handle);
  h ^= h >> 17;
  h *= 0xed5ad4bbu;
  h ^= h >> 11;
  return h;
}

// Parameter offsets and sizes from the driver: the runtime's cudaKernel_t is a CUkernel, a
// driver launch's handle a CUfunction (or a CUkernel cast to one). Returns the count, or -1.
int param_layout(const void* handle, bool function_first, size_t (&offsets)[kMaxKernelParams],
                 size_t (&sizes)[kMaxKernelParams]) noexcept {
  const StageTimer timer(Stage::KernelLayout);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool as_function = (attempt == 0) == function_first;
    int n = 0;
    while (n < kMaxKernelParams) {
      const DriverApi& d = driver();
      CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
      if (as_function && d.func_get_param_info) {
        rc = d.func_get_param_info(static_cast<CUfunction>(const_cast<void*>(handle)), n, &offsets[n], &sizes[n]);
      } else if (!as_function && d.kernel_get_param_info) {
        rc = d.kernel_get_param_info(static_cast<CUkernel>(const_cast<void*>(handle)), n, &offsets[n], &sizes[n]);
      }
      if (rc != CUDA_SUCCESS) break;
      ++n;
    }
    if (n > 0) return n;
  }
  return -1;  // no parameters, or a handle the driver does not describe
}

KernelInfo* build_kernel(const void* handle, const char* name, bool function_first) noexcept {
  auto* k = static_cast<KernelInfo*>(calloc(1, sizeof(KernelInfo)));
  if (!k) return nullptr;
  k->handle = handle;
  k->name_seen = name;
  k->name = name ? strdup(name) : nullptr;
  k->id = allocate_kernel_id();
  g_stats.kernels.fetch_add(1, std::memory_order_relaxed);

  size_t offsets[kMaxKernelParams], sizes[kMaxKernelParams];
  const int count = param_layout(handle, function_first, offsets, sizes);
  k->has_offsets = count > 0;
  static thread_local KernelSignature signature;  // large: not on a callback's stack
  bool typed = false;                             // (a C++ name the demangler cannot read has no typed checks)
  if (const StageTimer timer(Stage::KernelTypes); char* demangled = demangle_kernel_name(name)) {
    typed = parse_kernel_params(demangled, signature) && (count < 0 || signature.count == count);
    free(demangled);
  }
  if (typed) {
    // Only parameters declared as pointers: by-value structs and integers are never pointers.
    for (int i = 0; i < signature.count; ++i) {
      const KernelParam& p = signature.params[i];
      if (!p.is_pointer || (count > 0 && sizes[i] != sizeof(void*))) continue;
      k->checks[k->check_count++] = {static_cast<uint16_t>(i), 0, count > 0 ? static_cast<uint32_t>(offsets[i]) : 0,
                                     p.alignment};
    }
  } else if (name && strncmp(name, "_Z", 2) != 0 && count > 0) {
    // extern "C": no types. Every pointer-sized parameter may be a pointer; its alignment is
    // unknown, whether it points somewhere reachable is still checked.
    for (int i = 0; i < count; ++i) {
      if (sizes[i] == sizeof(void*))
        k->checks[k->check_count++] = {static_cast<uint16_t>(i), 0, static_cast<uint32_t>(offsets[i]), 0};
    }
  }
  // Every word where a pointer may be has its low bits watched, typed or not: a float* parameter
  // may be read as float4 inside the kernel, a struct may hold pointers. Parameters whose type
  // already demands 16-byte alignment are checked for it above.
  // Words no typed check covers (a by-value struct's) are also asked whether they point somewhere
  // the device can reach: a struct's stale or host pointer member (watch_words).
  for (int i = 0; i < count && k->word_count < kMaxWatchedWords; ++i) {
    if (sizes[i] < sizeof(void*) || offsets[i] % sizeof(void*) != 0) continue;
    bool typed_pointer = false, typed_vector = false;
    for (uint16_t c = 0; c < k->check_count; ++c) {
      typed_pointer |= k->checks[c].index == i;
      typed_vector |= k->checks[c].index == i && k->checks[c].alignment >= 16;
    }
    if (typed_vector) continue;
    for (size_t member = 0; member + sizeof(void*) <= sizes[i] && k->word_count < kMaxWatchedWords;
         member += sizeof(void*)) {
      k->words[k->word_count++] = {static_cast<uint32_t>(offsets[i] + member), static_cast<uint16_t>(i),
                                   static_cast<uint16_t>(member), typed_pointer};
    }
  }
  return k;
}

KernelInfo* find_kernel(const void* handle, const char* name, bool function_first) noexcept {
  // Per-thread direct-mapped cache first: the common path is one load and a compare.
  struct Cached {
    const void* handle;
    KernelInfo* info;
  };
  thread_local Cached tls_cache[64];
  Cached& c = tls_cache[slot_of(handle) % 64];
  if (c.handle == handle && c.info && same_kernel(c.info, handle, name)) return c.info;

  size_t slot = slot_of(handle) % kKernelSlots;
  for (size_t probe = 0; probe < kKernelSlots; ++probe, slot = (slot + 1) % kKernelSlots) {
    KernelInfo* k = g_kernels[slot].load(std::memory_order_acquire);
    if (!k) break;
    if (same_kernel(k, handle, name)) {
      c = {handle, k};
      return k;
    }
  }
  // New kernel (or a handle reused by a reloaded module): build outside the lock, publish under it.
  KernelInfo* k = build_kernel(handle, name, function_first);
  if (!k) return nullptr;
  while (g_insert_lock.exchange(true, std::memory_order_acquire)) sched_yield();
  slot = slot_of(handle) % kKernelSlots;
  for (size_t probe = 0; probe < kKernelSlots; ++probe, slot = (slot + 1) % kKernelSlots) {
    KernelInfo* expected = nullptr;
    if (g_kernels[slot].compare_exchange_strong(expected, k, std::memory_order_acq_rel)) break;
  }
  g_insert_lock.store(false, std::memory_order_release);
  c = {handle, k};
  return k;
}

// Launch sites recorded per (kernel, word, low bits): lossy (a collision costs a repeated record).
constexpr size_t kSiteSlots = 4096;
std::atomic<uint64_t> g_recorded_sites[kSiteSlots];

uint64_t site_key(uint32_t kernel_id, uint16_t word, uint8_t bits, uint64_t stack_id) noexcept {
  uint64_t h = stack_id * 0x9e3779b97f4a7c15ull;
  h ^= (uint64_t{kernel_id} << 24 | uint64_t{word} << 8 | bits) * 0xff51afd7ed558ccdull;
  h ^= h >> 31;
  return h | 1;  // 0 marks an empty slot
}

// The words' records are sampled and kept once per launch site: a loop launching with p + 1, or
// with a struct whose word always holds such a value, would otherwise cost a stack walk (and a
// record) per launch. Each word is looked at in each of the first kFullyWalked launches that
// bring it such a value, then in one in kWalkEvery; a new site that launches a few times later on
// can be missed (docs say so). The tool gives these findings no launch count. A launch in a word's
// first kFullyWalked is not remembered clean (tls_noteworthy); later, the same arguments again are
// not looked at until memory changes (clean_launches.h).
constexpr uint32_t kFullyWalked = 64;
constexpr uint32_t kWalkEvery = 64;
thread_local bool tls_noteworthy = false;  // the launch being checked is not clean
bool look_this_time(std::atomic<uint32_t>& launches) noexcept {
  const uint32_t seen = launches.fetch_add(1, std::memory_order_relaxed);
  if (seen < kFullyWalked) tls_noteworthy = true;
  return seen < kFullyWalked || seen % kWalkEvery == 0;
}

// What a word's record is about, for the per-site table: its low bits (1 to 15), or one of these.
constexpr uint8_t kUnreachableTag = 0x10;  // | LaunchProblem
constexpr uint8_t kHostMemoryTag = 0x20;

// Records `f` unless this launch site already recorded it for this word.
void record_once_per_site(KernelInfo* k, uint16_t w, uint8_t tag, LaunchBitsFact f, uint64_t& stack_id) noexcept {
  if (!stack_id) stack_id = capture_stack();
  const uint64_t key = site_key(k->id, w, tag, stack_id);
  std::atomic<uint64_t>& slot = g_recorded_sites[key % kSiteSlots];
  if (slot.load(std::memory_order_relaxed) == key) return;
  slot.store(key, std::memory_order_relaxed);
  if (!k->recorded.exchange(true)) record_kernel(k->id, k->name);
  f.stack_id = stack_id;
  record_launch_bits(f);
}

// A value CUDA could have handed out that is not 16-byte aligned: the tool compares it with what
// the kernel's code requires (tool/kernel_code/kernel_access.h).
void note_low_bits(KernelInfo* k, uint16_t w, const LaunchBitsFact& word, uint64_t& stack_id) noexcept {
  if (look_this_time(k->unaligned_launches[w]))
    record_once_per_site(k, w, static_cast<uint8_t>(word.value & 15), word, stack_id);
}

// A value in the handed-out range that points to no memory the driver knows, or into a block a
// pool took back. Whether it is a stale pointer or an integer that looks like one is for the tool
// to tell, from the allocations it replays.
void note_unreachable(KernelInfo* k, uint16_t w, const LaunchBitsFact& word, uint64_t& stack_id) noexcept {
  LaunchBitsFact f = word;
  if (in_returned_pool_block(f.value)) {
    f.problem = static_cast<uint8_t>(trace::LaunchProblem::ReturnedToPool);
  } else if (const Reachability* r = unreachable(f.value)) {
    f.problem = static_cast<uint8_t>(trace::LaunchProblem::NotAccessible);
    f.driver_result = r->result, f.memory_type = r->memory_type, f.host_readable = r->host_readable;
  } else {
    return;
  }
  if (look_this_time(k->unreachable_launches[w])) record_once_per_site(k, w, kUnreachableTag | f.problem, f, stack_id);
}

// A value outside the handed-out range that the process can read and the driver does not know:
// pageable host memory, or an integer that happens to look like its address. The tool reports it
// only where the kernel's code loads or stores through the word. The system call that asks is
// made only for the launches sampled, and not again for the value last asked about at this word
// (cuBLAS passes the same host-side alpha at every launch; sizes and strides repeat).
void note_host_memory(KernelInfo* k, uint16_t w, const LaunchBitsFact& word, uint64_t& stack_id) noexcept {
  constexpr uint64_t kLowestMappable = 0x10000, kUserSpaceEnd = uint64_t{1} << 47;
  if (word.value < kLowestMappable || word.value >= kUserSpaceEnd) return;
  if (k->host_value_asked[w].load(std::memory_order_relaxed) == word.value) return;
  if (!look_this_time(k->host_launches[w])) return;
  k->host_value_asked[w].store(word.value, std::memory_order_relaxed);
  if (!readable_memory_cached(word.value)) return;
  const Reachability* r = unreachable(word.value);
  if (!r) return;  // memory the device can reach (registered, or a system where it reaches all)
  LaunchBitsFact f = word;
  f.problem = static_cast<uint8_t>(trace::LaunchProblem::NotAccessible);
  f.driver_result = r->result, f.memory_type = r->memory_type, f.host_readable = true;
  record_once_per_site(k, w, kHostMemoryTag, f, stack_id);
}

// Every word where a pointer may be: its low bits where CUDA could have handed it out; where no
// typed check covers it (a by-value struct's), whether it points somewhere the device can reach.
void watch_words(trace::LaunchPath path, KernelInfo* k, void* const* params, const char* packed) noexcept {
  uint64_t stack_id = 0;
  for (uint16_t w = 0; w < k->word_count; ++w) {
    const WordCheck& word = k->words[w];
    const char* argument = params ? static_cast<const char*>(params[word.param_index]) : packed + word.buffer_offset;
    if (!argument) continue;
    LaunchBitsFact f;
    memcpy(&f.value, params ? argument + word.member_offset : argument, sizeof f.value);
    f.kernel_id = k->id, f.param_index = word.param_index, f.member_offset = word.member_offset;
    f.buffer_offset = word.buffer_offset, f.path = path;
    if (!in_handed_out_range(f.value)) {
      if (!word.typed_pointer) note_host_memory(k, w, f, stack_id);
      continue;
    }
    if (f.value & 15) note_low_bits(k, w, f, stack_id);
    if (!word.typed_pointer) note_unreachable(k, w, f, stack_id);
  }
}

void report(KernelInfo* k, const LaunchFact& fact) noexcept {
  tls_noteworthy = true;
  if (!k->recorded.exchange(true)) record_kernel(k->id, k->name);
  record_launch_param(fact);
}

// Where a packed-buffer launch keeps its arguments (cuLaunchKernel's `extra`).
const char* packed_arguments(void* const* extra) noexcept {
  for (int i = 0; extra && i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) return static_cast<const char*>(extra[i + 1]);
  }
  return nullptr;
}

// What the checks read of a launch's arguments, digested: every watched word, every typed parameter.
uint64_t arguments_digest(const KernelInfo* k, void* const* params, const char* packed) noexcept {
  uint64_t digest = clean_digest_start(k->id);
  for (const WordCheck *w = k->words, *end = k->words + k->word_count; w < end;) {  // a parameter's words at once
    const uint16_t param = w->param_index;
    const char* base = params ? static_cast<const char*>(params[param]) : packed + w->buffer_offset - w->member_offset;
    for (; w < end && w->param_index == param; ++w) {
      uint64_t value = 0;
      if (base) memcpy(&value, base + w->member_offset, sizeof value);
      digest = clean_digest_add(digest, value);
    }
  }
  for (const ParamCheck* c = k->checks; c < k->checks + k->check_count; ++c) {
    const void* argument = params ? params[c->index] : packed + c->offset;
    uint64_t value = 0;
    if (argument) memcpy(&value, argument, sizeof value);
    digest = clean_digest_add(digest, value);
  }
  return digest;
}

void check_arguments(trace::LaunchPath path, KernelInfo* k, void* const* params, void* const* extra) noexcept {
  const char* packed = params ? nullptr : packed_arguments(extra);
  if (!params && !(packed && k->has_offsets)) return;
  // Arguments found clean with memory as it is now: nothing to ask again. (Peer access depends on
  // the launching device too: with several devices, every launch is checked.)
  const bool peers = several_devices();
  const uint64_t digest = peers ? 0 : arguments_digest(k, params, packed);
  if (!peers && seen_clean(digest)) {
    if (g_stage_stats) g_stats.clean_repeats.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  tls_noteworthy = false;
  if (k->word_count) watch_words(path, k, params, packed);
  int8_t launch_device = -2;  // asked once, at the first pointer that needs it
  for (uint16_t i = 0; i < k->check_count; ++i) {
    const ParamCheck& check = k->checks[i];
    const void* argument = params ? params[check.index] : packed + check.offset;
    if (!argument) continue;
    uint64_t value;
    memcpy(&value, argument, sizeof value);
    if (value == 0) continue;  // optional arguments are commonly null
    if (check.alignment > 1 && value % check.alignment != 0) {
      LaunchFact f;
      f.kernel_id = k->id, f.param_index = check.index, f.problem = trace::LaunchProblem::Misaligned, f.path = path;
      f.value = value, f.alignment = check.alignment;
      report(k, f);
    }
    if (in_returned_pool_block(value)) {
      LaunchFact f;
      f.kernel_id = k->id, f.param_index = check.index, f.problem = trace::LaunchProblem::ReturnedToPool, f.path = path;
      f.value = value, f.alignment = check.alignment;
      report(k, f);
      continue;  // the pool's memory around it is reachable: nothing more to ask the driver
    }
    if (const Reachability* r = unreachable(value)) {
      LaunchFact f;
      f.kernel_id = k->id, f.param_index = check.index, f.problem = trace::LaunchProblem::NotAccessible, f.path = path;
      f.value = value, f.alignment = check.alignment, f.driver_result = r->result, f.memory_type = r->memory_type;
      f.host_readable = r->host_readable;
      report(k, f);
    } else if (peers) {
      if (launch_device == -2) launch_device = current_device();
      int8_t owner = -1;
      if (launch_device >= 0 && peer_denied(value, launch_device, owner)) {
        LaunchFact f;
        f.kernel_id = k->id, f.param_index = check.index, f.problem = trace::LaunchProblem::PeerNotEnabled;
        f.path = path, f.value = value, f.alignment = check.alignment;
        f.pointer_device = owner, f.launch_device = launch_device;
        f.memory_type = CU_MEMORYTYPE_DEVICE;
        report(k, f);
      }
    }
  }
  if (!peers && !tls_noteworthy) remember_clean(digest);
}

bool driver_path(trace::LaunchPath path) noexcept {
  return path == trace::LaunchPath::cuLaunchKernel || path == trace::LaunchPath::cuLaunchKernelEx ||
         path == trace::LaunchPath::cuLaunchCooperativeKernel;
}

}  // namespace

void log_launch_check_stats() noexcept {
  log_info(
      "launch checks: %llu launches, %llu kernels, %llu driver pointer queries (%llu without a range), %llu kernel "
      "name comparisons, %llu launches with arguments found clean before",
      static_cast<unsigned long long>(launches_so_far()), static_cast<unsigned long long>(g_stats.kernels.load()),
      static_cast<unsigned long long>(driver_pointer_queries()),
      static_cast<unsigned long long>(single_address_ranges()),
      static_cast<unsigned long long>(g_stats.name_compares.load()),
      static_cast<unsigned long long>(g_stats.clean_repeats.load()));
}

void check_launch(trace::LaunchPath path, const void* handle, const char* name, void* const* params,
                  void* const* extra) noexcept {
  const StageTimer timer(Stage::LaunchCheck);
  note_launch();
  if (!handle) return;
  check_kernel_arguments(path, handle, name, driver_path(path), params, extra);
}

void check_kernel_arguments(trace::LaunchPath path, const void* handle, const char* name, bool function_first,
                            void* const* params, void* const* extra) noexcept {
  KernelInfo* k = find_kernel(handle, name, function_first);
  if (k && (k->check_count || k->word_count)) check_arguments(path, k, params, extra);
}

}  // namespace cuaudit::inject
