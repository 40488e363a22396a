#include "cupti_api_params.h"

#include <type_traits>

namespace cuaudit::inject {

const TrackedCallback kTrackedCallbacks[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, Api::cudaMalloc},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020, Api::cudaMallocPitch},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020, Api::cudaMalloc3D},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020, Api::cudaMallocArray},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020, Api::cudaMalloc3DArray},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocMipmappedArray_v5000,
     Api::cudaMallocMipmappedArray},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, Api::cudaMallocManaged},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, Api::cudaMallocHost},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, Api::cudaHostAlloc},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, Api::cudaHostRegister},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, Api::cudaMallocAsync},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020, Api::cudaMallocAsync},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
     Api::cudaMallocFromPoolAsync},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
     Api::cudaMallocFromPoolAsync},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, Api::cudaFree},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, Api::cudaFreeHost},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020, Api::cudaFreeArray},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeMipmappedArray_v5000, Api::cudaFreeMipmappedArray},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, Api::cudaHostUnregister},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, Api::cudaFreeAsync},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020, Api::cudaFreeAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, Api::cuMemAlloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, Api::cuMemAllocPitch},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, Api::cuMemAllocManaged},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, Api::cuMemAllocHost},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, Api::cuMemHostAlloc},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2, Api::cuMemHostRegister},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, Api::cuMemAllocAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, Api::cuMemAllocAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, Api::cuMemAllocFromPoolAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, Api::cuMemAllocFromPoolAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2, Api::cuArrayCreate},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2, Api::cuArray3DCreate},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate, Api::cuMipmappedArrayCreate},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, Api::cuMemCreate},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, Api::cuMemAddressReserve},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap, Api::cuMemMap},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, Api::cuMemFree},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, Api::cuMemFreeHost},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, Api::cuMemHostUnregister},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, Api::cuMemFreeAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, Api::cuMemFreeAsync},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy, Api::cuArrayDestroy},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy, Api::cuMipmappedArrayDestroy},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemRelease, Api::cuMemRelease},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree, Api::cuMemAddressFree},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, Api::cuMemUnmap},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenMemHandle_v4010, Api::cudaIpcOpenMemHandle},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaIpcCloseMemHandle_v4010, Api::cudaIpcCloseMemHandle},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolImportPointer_v11020,
     Api::cudaMemPoolImportPointer},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaExternalMemoryGetMappedBuffer_v10000,
     Api::cudaExternalMemoryGetMappedBuffer},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2, Api::cuIpcOpenMemHandle},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle, Api::cuIpcCloseMemHandle},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportPointer, Api::cuMemPoolImportPointer},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle,
     Api::cuMemImportFromShareableHandle},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuExternalMemoryGetMappedBuffer,
     Api::cuExternalMemoryGetMappedBuffer},
};
const size_t kTrackedCallbackCount = sizeof kTrackedCallbacks / sizeof kTrackedCallbacks[0];

#define CUAUDIT_RT(cbid, api) \
  { CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##cbid, Api::api }
#define CUAUDIT_DRV(cbid, api) \
  { CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##cbid, Api::api }
const TrackedCallback kResourceCallbacks[] = {
    CUAUDIT_RT(cudaStreamCreate_v3020, cudaStreamCreate),
    CUAUDIT_RT(cudaStreamCreateWithFlags_v5000, cudaStreamCreateWithFlags),
    CUAUDIT_RT(cudaStreamCreateWithPriority_v5050, cudaStreamCreateWithPriority),
    CUAUDIT_RT(cudaStreamDestroy_v3020, cudaStreamDestroy),
    CUAUDIT_RT(cudaStreamDestroy_v5050, cudaStreamDestroy),
    CUAUDIT_DRV(cuStreamCreate, cuStreamCreate),
    CUAUDIT_DRV(cuStreamCreateWithPriority, cuStreamCreateWithPriority),
    CUAUDIT_DRV(cuStreamDestroy, cuStreamDestroy),
    CUAUDIT_DRV(cuStreamDestroy_v2, cuStreamDestroy),
    CUAUDIT_RT(cudaEventCreate_v3020, cudaEventCreate),
    CUAUDIT_RT(cudaEventCreateWithFlags_v3020, cudaEventCreateWithFlags),
    CUAUDIT_RT(cudaEventDestroy_v3020, cudaEventDestroy),
    CUAUDIT_DRV(cuEventCreate, cuEventCreate),
    CUAUDIT_DRV(cuEventDestroy, cuEventDestroy),
    CUAUDIT_DRV(cuEventDestroy_v2, cuEventDestroy),
    CUAUDIT_RT(cudaGraphCreate_v10000, cudaGraphCreate),
    CUAUDIT_RT(cudaStreamEndCapture_v10000, cudaStreamEndCapture),
    CUAUDIT_RT(cudaStreamEndCapture_ptsz_v10000, cudaStreamEndCapture),
    CUAUDIT_RT(cudaGraphClone_v10000, cudaGraphClone),
    CUAUDIT_RT(cudaGraphDestroy_v10000, cudaGraphDestroy),
    CUAUDIT_DRV(cuGraphCreate, cuGraphCreate),
    CUAUDIT_DRV(cuStreamEndCapture, cuStreamEndCapture),
    CUAUDIT_DRV(cuStreamEndCapture_ptsz, cuStreamEndCapture),
    CUAUDIT_DRV(cuGraphClone, cuGraphClone),
    CUAUDIT_DRV(cuGraphDestroy, cuGraphDestroy),
    CUAUDIT_RT(cudaGraphInstantiate_v10000, cudaGraphInstantiate),
    CUAUDIT_RT(cudaGraphInstantiate_v12000, cudaGraphInstantiate),
    CUAUDIT_RT(cudaGraphInstantiateWithFlags_v11040, cudaGraphInstantiate),
    CUAUDIT_RT(cudaGraphInstantiateWithParams_v12000, cudaGraphInstantiate),
    CUAUDIT_RT(cudaGraphInstantiateWithParams_ptsz_v12000, cudaGraphInstantiate),
    CUAUDIT_RT(cudaGraphExecDestroy_v10000, cudaGraphExecDestroy),
    CUAUDIT_DRV(cuGraphInstantiate, cuGraphInstantiate),
    CUAUDIT_DRV(cuGraphInstantiate_v2, cuGraphInstantiate),
    CUAUDIT_DRV(cuGraphInstantiateWithFlags, cuGraphInstantiate),
    CUAUDIT_DRV(cuGraphInstantiateWithParams, cuGraphInstantiate),
    CUAUDIT_DRV(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiate),
    CUAUDIT_DRV(cuGraphExecDestroy, cuGraphExecDestroy),
    CUAUDIT_DRV(cuModuleLoad, cuModuleLoad),
    CUAUDIT_DRV(cuModuleLoadData, cuModuleLoadData),
    CUAUDIT_DRV(cuModuleLoadDataEx, cuModuleLoadData),
    CUAUDIT_DRV(cuModuleLoadFatBinary, cuModuleLoadData),
    CUAUDIT_DRV(cuModuleUnload, cuModuleUnload),
    CUAUDIT_RT(cudaLibraryLoadData_v12060, cudaLibraryLoadData),
    CUAUDIT_RT(cudaLibraryLoadFromFile_v12060, cudaLibraryLoadFromFile),
    CUAUDIT_RT(cudaLibraryUnload_v12060, cudaLibraryUnload),
    // Not the driver's cuLibraryLoadData/FromFile: the CUDA runtime loads every fatbin of the
    // program through them itself, lazily, at a kernel's first launch and outside any runtime call
    // CUPTI reports, so they cannot be told from the program's own (seen on the H200, CUDA 13).
    CUAUDIT_RT(cudaCreateTextureObject_v5000, cudaCreateTextureObject),
    CUAUDIT_RT(cudaCreateTextureObject_v2_v11080, cudaCreateTextureObject),
    CUAUDIT_RT(cudaDestroyTextureObject_v5000, cudaDestroyTextureObject),
    CUAUDIT_DRV(cuTexObjectCreate, cuTexObjectCreate),
    CUAUDIT_DRV(cuTexObjectDestroy, cuTexObjectDestroy),
    CUAUDIT_RT(cudaCreateSurfaceObject_v5000, cudaCreateSurfaceObject),
    CUAUDIT_RT(cudaDestroySurfaceObject_v5000, cudaDestroySurfaceObject),
    CUAUDIT_DRV(cuSurfObjectCreate, cuSurfObjectCreate),
    CUAUDIT_DRV(cuSurfObjectDestroy, cuSurfObjectDestroy),
    CUAUDIT_RT(cudaMemPoolCreate_v11020, cudaMemPoolCreate),
    CUAUDIT_RT(cudaMemPoolDestroy_v11020, cudaMemPoolDestroy),
    CUAUDIT_DRV(cuMemPoolCreate, cuMemPoolCreate),
    CUAUDIT_DRV(cuMemPoolDestroy, cuMemPoolDestroy),
    CUAUDIT_RT(cudaImportExternalMemory_v10000, cudaImportExternalMemory),
    CUAUDIT_RT(cudaDestroyExternalMemory_v10000, cudaDestroyExternalMemory),
    CUAUDIT_DRV(cuImportExternalMemory, cuImportExternalMemory),
    CUAUDIT_DRV(cuDestroyExternalMemory, cuDestroyExternalMemory),
    CUAUDIT_RT(cudaImportExternalSemaphore_v10000, cudaImportExternalSemaphore),
    CUAUDIT_RT(cudaDestroyExternalSemaphore_v10000, cudaDestroyExternalSemaphore),
    CUAUDIT_DRV(cuImportExternalSemaphore, cuImportExternalSemaphore),
    CUAUDIT_DRV(cuDestroyExternalSemaphore, cuDestroyExternalSemaphore),
};
#undef CUAUDIT_RT
#undef CUAUDIT_DRV
const size_t kResourceCallbackCount = sizeof kResourceCallbacks / sizeof kResourceCallbacks[0];

namespace {

template <typename T>
T deref(const T* p) noexcept {
  return p ? *p : T{};
}

uint64_t format_bytes(CUarray_format format) noexcept {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 0;  // packed and block-compressed formats: size unknown to us
  }
}

uint64_t at_least_one(size_t n) noexcept { return n ? n : 1; }

// Runtime arrays: element bytes from the channel descriptor's bit widths.
uint64_t channel_bytes(const cudaChannelFormatDesc* d) noexcept {
  return d ? static_cast<uint64_t>(d->x + d->y + d->z + d->w) / 8 : 0;
}

uint64_t mip_bytes(uint64_t w, uint64_t h, uint64_t d, unsigned levels, uint64_t element) noexcept {
  uint64_t total = 0;
  for (unsigned i = 0; i < at_least_one(levels); ++i) {
    total += at_least_one(w) * at_least_one(h) * at_least_one(d) * element;
    w /= 2, h /= 2, d /= 2;
  }
  return total;
}

// IPC handles and pool export data are opaque bytes that travel from one process to another
// unchanged: their hash pairs an import with its export (FNV-1a).
template <typename Handle>
uint64_t handle_hash(const Handle& handle) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(&handle);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < sizeof handle; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h ? h : 1;
}

// Every resource API's parameters start with the handle: an out-pointer to it for creations, the
// handle itself for destructions (checked for each struct by the compiler below). Stream capture
// ends with the stream first and the graph second.
void decode_resource(Api api, const void* params, ApiCall& call) noexcept {
  if (api == Api::cudaStreamEndCapture) {
    call.key =
        reinterpret_cast<uint64_t>(deref(static_cast<const cudaStreamEndCapture_v10000_params*>(params)->pGraph));
  } else if (api == Api::cuStreamEndCapture) {
    call.key = reinterpret_cast<uint64_t>(deref(static_cast<const cuStreamEndCapture_params*>(params)->phGraph));
  } else if (api_info(api).role == ApiRole::Alloc) {
    const uint64_t* out = *static_cast<const uint64_t* const*>(params);
    call.key = deref(out);
  } else {
    call.key = *static_cast<const uint64_t*>(params);
  }
}
static_assert(offsetof(cudaStreamCreate_v3020_params, pStream) == 0 &&
              offsetof(cudaEventDestroy_v3020_params, event) == 0 &&
              offsetof(cudaCreateTextureObject_v5000_params, pTexObject) == 0 &&
              offsetof(cuLibraryLoadData_params, library) == 0 && offsetof(cuModuleUnload_params, hmod) == 0 &&
              offsetof(cudaGraphInstantiateWithParams_v12000_params, pGraphExec) == 0 &&
              offsetof(cuImportExternalSemaphore_params, extSem_out) == 0 && sizeof(cudaTextureObject_t) == 8 &&
              sizeof(CUmodule) == 8);

// The APIs whose parameters say more than a field or two (api_decoding.inc has the others).
void decode_other(Api api, const void* params, ApiCall& call) noexcept {
  switch (api) {
    case Api::cudaMalloc3D: {
      auto* p = static_cast<const cudaMalloc3D_v3020_params*>(params);
      if (p->pitchedDevPtr) {
        call.key = reinterpret_cast<uint64_t>(p->pitchedDevPtr->ptr);
        call.bytes = p->pitchedDevPtr->pitch * at_least_one(p->extent.height) * at_least_one(p->extent.depth);
      }
      break;
    }
    case Api::cuArrayCreate: {
      auto* p = static_cast<const cuArrayCreate_v2_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->pHandle));
      if (const CUDA_ARRAY_DESCRIPTOR* d = p->pAllocateArray)
        call.bytes = at_least_one(d->Width) * at_least_one(d->Height) * d->NumChannels * format_bytes(d->Format);
      break;
    }
    case Api::cuArray3DCreate: {
      auto* p = static_cast<const cuArray3DCreate_v2_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->pHandle));
      if (const CUDA_ARRAY3D_DESCRIPTOR* d = p->pAllocateArray)
        call.bytes = mip_bytes(d->Width, d->Height, d->Depth, 1, d->NumChannels * format_bytes(d->Format));
      break;
    }
    case Api::cuMipmappedArrayCreate: {
      auto* p = static_cast<const cuMipmappedArrayCreate_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->pHandle));
      if (const CUDA_ARRAY3D_DESCRIPTOR* d = p->pMipmappedArrayDesc)
        call.bytes =
            mip_bytes(d->Width, d->Height, d->Depth, p->numMipmapLevels, d->NumChannels * format_bytes(d->Format));
      break;
    }
    case Api::cudaIpcOpenMemHandle: {
      auto* p = static_cast<const cudaIpcOpenMemHandle_v4010_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->devPtr));
      call.handle_hash = handle_hash(p->handle);
      break;
    }
    case Api::cuIpcOpenMemHandle: {
      auto* p = static_cast<const cuIpcOpenMemHandle_v2_params*>(params);
      call.key = deref(p->pdptr);
      call.handle_hash = handle_hash(p->handle);
      break;
    }
    case Api::cudaMemPoolImportPointer: {
      auto* p = static_cast<const cudaMemPoolImportPointer_v11020_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->ptr));
      if (p->exportData) call.handle_hash = handle_hash(*p->exportData);
      break;
    }
    case Api::cuMemPoolImportPointer: {
      auto* p = static_cast<const cuMemPoolImportPointer_params*>(params);
      call.key = deref(p->ptr_out);
      if (p->shareData) call.handle_hash = handle_hash(*p->shareData);
      break;
    }
    case Api::cudaExternalMemoryGetMappedBuffer: {
      auto* p = static_cast<const cudaExternalMemoryGetMappedBuffer_v10000_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->devPtr));
      if (p->bufferDesc) call.bytes = p->bufferDesc->size;
      break;
    }
    case Api::cuExternalMemoryGetMappedBuffer: {
      auto* p = static_cast<const cuExternalMemoryGetMappedBuffer_params*>(params);
      call.key = deref(p->devPtr);
      if (p->bufferDesc) call.bytes = p->bufferDesc->size;
      break;
    }
    default:  // host heap releases (the LD_PRELOAD interposer), graph nodes (graph facts), resources
      break;
  }
}

// A key (pointer or handle) as the trace stores it.
template <typename T>
uint64_t to_key(T value) noexcept {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<uint64_t>(value);
  } else {
    return static_cast<uint64_t>(value);
  }
}

}  // namespace

void decode_api_params(Api api, const void* params, ApiCall& call) noexcept {
  if (!params) return;
  if (is_resource(api_info(api).family)) return decode_resource(api, params, call);
  switch (api) {
#define CUAUDIT_DECODE(id, Params, key_of, bytes_of, stream_of) \
  case Api::id: {                                               \
    auto* p = static_cast<const Params*>(params);               \
    call.key = to_key(key_of);                                  \
    call.bytes = bytes_of;                                      \
    call.stream = to_key(stream_of);                            \
    return;                                                     \
  }
#include "api_decoding.inc"
#undef CUAUDIT_DECODE
    default:
      return decode_other(api, params, call);
  }
}

bool exported_memory(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, uint64_t& pointer,
                     uint64_t& hash) noexcept {
  if (!params) return false;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaIpcGetMemHandle_v4010) {
    auto* p = static_cast<const cudaIpcGetMemHandle_v4010_params*>(params);
    if (!p->handle) return false;
    pointer = reinterpret_cast<uint64_t>(p->devPtr), hash = handle_hash(*p->handle);
    return true;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolExportPointer_v11020) {
    auto* p = static_cast<const cudaMemPoolExportPointer_v11020_params*>(params);
    if (!p->exportData) return false;
    pointer = reinterpret_cast<uint64_t>(p->ptr), hash = handle_hash(*p->exportData);
    return true;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuIpcGetMemHandle) {
    auto* p = static_cast<const cuIpcGetMemHandle_params*>(params);
    if (!p->pHandle) return false;
    pointer = p->dptr, hash = handle_hash(*p->pHandle);
    return true;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuMemPoolExportPointer) {
    auto* p = static_cast<const cuMemPoolExportPointer_params*>(params);
    if (!p->shareData_out) return false;
    pointer = p->ptr, hash = handle_hash(*p->shareData_out);
    return true;
  }
  return false;
}

bool copy_pointers(CUpti_CallbackId cbid, const void* params, uint64_t (&out)[2]) noexcept {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000: {
      auto* p = static_cast<const cudaMemcpy_v3020_params*>(params);
      out[0] = reinterpret_cast<uint64_t>(p->dst), out[1] = reinterpret_cast<uint64_t>(p->src);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
      auto* p = static_cast<const cudaMemcpyAsync_v3020_params*>(params);
      out[0] = reinterpret_cast<uint64_t>(p->dst), out[1] = reinterpret_cast<uint64_t>(p->src);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000: {
      auto* p = static_cast<const cudaMemcpy2D_v3020_params*>(params);
      out[0] = reinterpret_cast<uint64_t>(p->dst), out[1] = reinterpret_cast<uint64_t>(p->src);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000: {
      auto* p = static_cast<const cudaMemcpy2DAsync_v3020_params*>(params);
      out[0] = reinterpret_cast<uint64_t>(p->dst), out[1] = reinterpret_cast<uint64_t>(p->src);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000: {
      auto* p = static_cast<const cudaMemset_v3020_params*>(params);
      out[0] = out[1] = reinterpret_cast<uint64_t>(p->devPtr);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000: {
      auto* p = static_cast<const cudaMemsetAsync_v3020_params*>(params);
      out[0] = out[1] = reinterpret_cast<uint64_t>(p->devPtr);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace cuaudit::inject
