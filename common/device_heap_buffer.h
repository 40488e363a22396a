// What the device-heap patches (injection/device_heap_patches.cu, run on the GPU in place of each
// device-side malloc and free) write, and the injection reads back, in host memory both can reach.
// Compiled by nvcc for the device and by the host compilers, so: plain structs, no library.
//
// One Buffer per CUDA context holds the calls in the order the GPU's threads reserved them. Each
// launch of a patched kernel is handed a LaunchSlot as the patches' userdata: the slot names the
// launch, so each call is tied to the launch (and through it to the host stack) that made it.
#pragma once

#include <stdint.h>

#ifdef __CUDACC__
#define CUAUDIT_HOST_DEVICE __host__ __device__
#else
#define CUAUDIT_HOST_DEVICE
#endif

namespace cuaudit::device_heap {

enum CallKind : uint64_t { kMalloc = 1, kFree = 2 };

// A call is whole once `launch_and_kind` is non-zero: the patch writes that word last, after a
// system-wide fence, so the host never reads a half-written call.
struct Call {
  uint64_t pc;               // the device code address of the malloc or free
  uint64_t address;          // what malloc returned (0: the heap was exhausted), or what free was given
  uint64_t bytes;            // malloc's size; 0 for free
  uint64_t launch_and_kind;  // launch id << 8 | CallKind
};

struct Buffer {
  unsigned long long reserved;  // calls reserved so far (may pass capacity: the rest were dropped)
  unsigned long long capacity;  // calls[] has room for this many
  Call calls[1];                // capacity of them
};

struct LaunchSlot {
  uint64_t launch_id;
  Buffer* buffer;
};

CUAUDIT_HOST_DEVICE inline uint64_t pack_launch_and_kind(uint64_t launch_id, uint64_t kind) {
  return launch_id << 8 | kind;
}
CUAUDIT_HOST_DEVICE inline uint64_t launch_of(uint64_t word) { return word >> 8; }
CUAUDIT_HOST_DEVICE inline uint64_t kind_of(uint64_t word) { return word & 0xff; }
// Bytes of a buffer with room for `capacity` calls.
CUAUDIT_HOST_DEVICE inline uint64_t buffer_bytes(uint64_t capacity) {
  return sizeof(Buffer) + (capacity - 1) * sizeof(Call);
}

}  // namespace cuaudit::device_heap
