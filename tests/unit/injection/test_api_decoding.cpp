// What the injection reads from CUPTI's parameter structs (injection/api_decoding.inc and the named
// decoders beside it), on structs filled here as CUPTI would hand them over at a call's EXIT.
#include <doctest/doctest.h>

#include "cupti_api_params.h"

using namespace cuaudit;
using inject::ApiCall;
using inject::decode_api_params;

TEST_CASE("a table row decodes its key, bytes and stream, out-parameters are read, none is 0") {
  void* device = reinterpret_cast<void*>(0x7f0000001000);
  cudaMalloc_v3020_params malloc_params{&device, 4096};
  ApiCall call{Api::cudaMalloc};
  decode_api_params(Api::cudaMalloc, &malloc_params, call);
  CHECK(call.key == 0x7f0000001000);
  CHECK(call.bytes == 4096);
  CHECK(call.stream == 0);

  malloc_params.devPtr = nullptr;  // the program passed no pointer: nothing to read
  call = ApiCall{Api::cudaMalloc};
  decode_api_params(Api::cudaMalloc, &malloc_params, call);
  CHECK(call.key == 0);
  CHECK(call.bytes == 4096);

  size_t pitch = 512;
  cudaMallocPitch_v3020_params pitch_params{&device, &pitch, 500, 8};
  call = ApiCall{Api::cudaMallocPitch};
  decode_api_params(Api::cudaMallocPitch, &pitch_params, call);
  CHECK(call.bytes == 512 * 8);

  cudaMallocAsync_v11020_params async_params{&device, 64, reinterpret_cast<cudaStream_t>(0x5000)};
  call = ApiCall{Api::cudaMallocAsync};
  decode_api_params(Api::cudaMallocAsync, &async_params, call);
  CHECK(call.key == 0x7f0000001000);
  CHECK(call.stream == 0x5000);

  cudaFree_v3020_params free_params{device};
  call = ApiCall{Api::cudaFree};
  decode_api_params(Api::cudaFree, &free_params, call);
  CHECK(call.key == 0x7f0000001000);
  CHECK(call.bytes == 0);
}

TEST_CASE("driver rows: device pointers and physical handles are integers, not pointers") {
  CUdeviceptr dptr = 0x7f0000002000;
  cuMemAlloc_v2_params alloc{&dptr, 8192};
  ApiCall call{Api::cuMemAlloc};
  decode_api_params(Api::cuMemAlloc, &alloc, call);
  CHECK(call.key == 0x7f0000002000);
  CHECK(call.bytes == 8192);

  cuMemRelease_params release{0xabcdef};
  call = ApiCall{Api::cuMemRelease};
  decode_api_params(Api::cuMemRelease, &release, call);
  CHECK(call.key == 0xabcdef);

  cuMemUnmap_params unmap{0x7f0000003000, 1 << 21};
  call = ApiCall{Api::cuMemUnmap};
  decode_api_params(Api::cuMemUnmap, &unmap, call);
  CHECK(call.key == 0x7f0000003000);
  CHECK(call.bytes == 1 << 21);
}

TEST_CASE("the named decoders: a 3D pitched pointer, an IPC handle's hash") {
  cudaPitchedPtr pitched{reinterpret_cast<void*>(0x7f0000004000), 1024, 1000, 16};
  cudaMalloc3D_v3020_params params3d{&pitched, cudaExtent{1000, 16, 4}};
  ApiCall call{Api::cudaMalloc3D};
  decode_api_params(Api::cudaMalloc3D, &params3d, call);
  CHECK(call.key == 0x7f0000004000);
  CHECK(call.bytes == 1024 * 16 * 4);

  void* opened = reinterpret_cast<void*>(0x7f0000005000);
  cudaIpcMemHandle_t handle{};
  handle.reserved[0] = 7;
  cudaIpcOpenMemHandle_v4010_params ipc{&opened, handle, 0};
  call = ApiCall{Api::cudaIpcOpenMemHandle};
  decode_api_params(Api::cudaIpcOpenMemHandle, &ipc, call);
  CHECK(call.key == 0x7f0000005000);
  CHECK(call.handle_hash != 0);

  call = ApiCall{Api::cudaMalloc};
  decode_api_params(Api::cudaMalloc, nullptr, call);  // no parameters at all
  CHECK(call.key == 0);
}
