#include "cupti_api_params.h"

#include <type_traits>

namespace cuaudit::inject {

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
