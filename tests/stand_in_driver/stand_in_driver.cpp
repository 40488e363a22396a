// A stand-in for the CUDA driver's few functions the launch checker asks (linked as a library
// whose soname is libcuda.so.1, so that resolve_driver_api finds it as it finds the real one):
// parameter layouts of the benchmark's kernels, and the memory one segment of device memory holds.
// Only for bench_launch_checks and the launch checker's unit test; no CUDA program loads it.
#include <cuda.h>

#include <cstring>

#include "stand_in_kernels.h"

namespace {
bool g_segment_live = true;
}

extern "C" {

// Tests: the segment freed behind the checker's back (false) or there again.
void cuaudit_stand_in_segment_live(bool live) { g_segment_live = live; }

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t* offset, size_t* size) {
  const auto* k = reinterpret_cast<const cuaudit::bench::StandInKernel*>(kernel);
  if (index >= k->param_count) return CUDA_ERROR_INVALID_VALUE;
  *offset = k->offsets[index];
  *size = k->sizes[index];
  return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction, size_t, size_t*, size_t*) { return CUDA_ERROR_INVALID_HANDLE; }

// As the driver answers: device memory inside the segment, zeros (and success) for anything else.
CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes, void** data, CUdeviceptr value) {
  const bool device = g_segment_live && value >= cuaudit::bench::kSegmentStart &&
                      value < cuaudit::bench::kSegmentStart + cuaudit::bench::kSegmentBytes;
  for (unsigned int i = 0; i < count; ++i) {
    switch (attributes[i]) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned int*>(data[i]) = device ? CU_MEMORYTYPE_DEVICE : 0;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *static_cast<CUdeviceptr*>(data[i]) = device ? cuaudit::bench::kSegmentStart : 0;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *static_cast<size_t*>(data[i]) = device ? cuaudit::bench::kSegmentBytes : 0;
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *static_cast<CUdeviceptr*>(data[i]) = device ? value : 0;
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *static_cast<int*>(data[i]) = device ? 0 : -1;
        break;
      default:
        memset(data[i], 0, sizeof(unsigned int));
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr* start, size_t* size, CUdeviceptr) {
  *start = cuaudit::bench::kSegmentStart;
  *size = cuaudit::bench::kSegmentBytes;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
}
