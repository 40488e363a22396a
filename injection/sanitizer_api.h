// The few types and functions of NVIDIA's Compute Sanitizer API that --device-heap uses, declared
// from its reference (https://docs.nvidia.com/compute-sanitizer/api/): the headers ship only inside
// compute-sanitizer's folder of a full toolkit, which the machines that build cuaudit may lack.
// Numbers and layouts are those of sanitizer_callbacks.h and sanitizer_patching.h of CUDA 12.x and
// 13.0; tests/gpu/device_heap/check_declarations.sh compares them with the real headers on the GPU
// machine. The library (libsanitizer-public.so) is loaded with dlopen from the path the launcher
// found, so the injection needs nothing of it in any other mode.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace cuaudit::inject::sanitizer {

using Result = int;  // SanitizerResult: 0 is success
inline constexpr Result kSuccess = 0;

enum Domain : int { kDomainResource = 3, kDomainSynchronize = 4, kDomainLaunch = 5 };
enum ResourceCbid : int {
  kContextCreationStarting = 2,
  kContextCreationFinished = 3,
  kModuleLoaded = 9,
  kDeviceMemoryAlloc = 11,
  kDeviceMemoryFree = 12,
  kHostMemoryAlloc = 13,
  kHostMemoryFree = 14,
};
enum SynchronizeCbid : int { kStreamSynchronized = 1, kContextSynchronized = 2 };
enum LaunchCbid : int { kLaunchBegin = 1 };
enum InstructionId : int { kDeviceSideMalloc = 11, kDeviceSideFree = 12 };
enum MemoryFlag : uint32_t { kFlagModule = 0x1, kFlagManaged = 0x2, kFlagHostMapped = 0x4, kFlagHostPinned = 0x8 };

using SubscriberHandle = struct SubscriberOpaque*;
using StreamHandle = struct StreamOpaque*;
using LaunchHandle = struct LaunchOpaque*;
using Callback = void (*)(void* userdata, int domain, int cbid, const void* data);

struct ResourceModuleData {
  CUcontext context;
  CUmodule module;
  size_t cubin_bytes;
  const char* cubin;
  CUlibrary library;
};

struct ResourceMemoryData {
  uint64_t address;
  uint64_t size;
  CUcontext context;
  CUdevice device;
  CUstream stream;
  StreamHandle stream_handle;
  CUmemoryPool memory_pool;
  uint32_t flags;  // MemoryFlag bits
  uint32_t permissions;
  int visibility;
  CUdevice source_device;
};

struct SynchronizeData {
  CUcontext context;
  CUstream stream;
  StreamHandle stream_handle;
};

struct LaunchData {
  CUcontext context;
  CUstream stream;
  StreamHandle stream_handle;
  CUmodule module;
  CUfunction function;
  const char* function_name;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t cluster[3];
  uint64_t grid_id;
  LaunchHandle launch;
  CUdevice device;
  CUcontext api_context;
  CUstream api_stream;
  StreamHandle api_stream_handle;
};

// The library's functions, resolved by name; all present or load() fails.
struct Api {
  Result (*subscribe)(SubscriberHandle*, Callback, void*) = nullptr;
  Result (*enable_domain)(uint32_t, SubscriberHandle, int) = nullptr;
  Result (*add_patches_from_file)(const char*, CUcontext) = nullptr;
  Result (*patch_instructions)(int, CUmodule, const char*) = nullptr;
  Result (*patch_module)(CUmodule) = nullptr;
  Result (*alloc_host)(CUcontext, void**, size_t) = nullptr;
  Result (*set_launch_callback_data)(LaunchHandle, CUfunction, StreamHandle, const void*) = nullptr;
  Result (*get_function_pc_and_size)(CUmodule, const char*, uint64_t*, uint64_t*) = nullptr;
  Result (*get_result_string)(Result, const char**) = nullptr;
};

// dlopen(path) and every function; false with `error` set when the library or a function is missing.
bool load(const char* path, Api& api, char* error, size_t error_bytes) noexcept;

// The library's words for a result ("One or more of the parameters is invalid"), else its number.
const char* result_text(const Api& api, Result result) noexcept;

}  // namespace cuaudit::inject::sanitizer
