#include "cupti_subscriber.h"

#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "call_recorder.h"
#include "launch_checker.h"
#include "memory_sampler.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

CUpti_SubscriberHandle g_subscriber = nullptr;
bool g_record_call_sites = false;  // --check-api-results
bool g_check_launches = true;      // --check-launch-params

// What this thread is in the middle of, as the callbacks see it. One thread_local for all of it:
// every CUDA call comes through here twice, and each thread_local costs a lookup in a library
// loaded with dlopen.
struct ThreadState {
  // Re-entrancy guard: CUPTI calls we make (cuptiGetDeviceId) may call the driver, whose
  // callbacks come back here.
  bool in_callback = false;
  // Inside a runtime call that launches or sets kernel arguments: the driver calls and graph nodes
  // it makes on our behalf were checked already, at the runtime call.
  bool in_runtime_launch = false;
  // Inside a call that copies existing nodes (instantiate, clone, child graphs, exec update):
  // their kernels were checked when the originals were made.
  bool copying_nodes = false;
  // The runtime call adding graph nodes, to name the nodes it creates by it.
  trace::LaunchPath adding_nodes = trace::LaunchPath::cuGraphAddKernelNode;
  // Runtime calls in progress (every runtime callback is enabled): a driver call made at depth 0
  // is the program's own.
  int runtime_depth = 0;
};
thread_local ThreadState tls;

bool copies_graph_nodes(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphClone_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddChildGraphNode_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020:
        return true;
      default:
        return false;
    }
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphClone:
      return true;
    default:
      return false;
  }
}


struct CallbackId {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  Api api;
};

constexpr CallbackId kTracked[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, Api::cudaMalloc},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020, Api::cudaMallocPitch},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020, Api::cudaMalloc3D},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020, Api::cudaMallocArray},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020, Api::cudaMalloc3DArray},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocMipmappedArray_v5000, Api::cudaMallocMipmappedArray},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, Api::cudaMallocManaged},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, Api::cudaMallocHost},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, Api::cudaHostAlloc},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, Api::cudaHostRegister},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, Api::cudaMallocAsync},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020, Api::cudaMallocAsync},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020, Api::cudaMallocFromPoolAsync},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020, Api::cudaMallocFromPoolAsync},
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
};

constexpr CUpti_CallbackId kMaxCbid = 1024;
// Dense lookup from (domain, cbid) to Api, filled once before subscribing.
struct ApiLookup {
  int16_t runtime[kMaxCbid];
  int16_t driver[kMaxCbid];
};
ApiLookup g_lookup;

int16_t lookup(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept {
  if (cbid >= kMaxCbid) return -1;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return g_lookup.runtime[cbid];
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return g_lookup.driver[cbid];
  return -1;
}

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

// Fills key and bytes from the call's parameters. Runs at EXIT: out-parameters are valid
// when the call succeeded.
void decode(Api api, const void* params, ApiCall& call) noexcept {
  switch (api) {
    case Api::cudaMalloc: {
      auto* p = static_cast<const cudaMalloc_v3020_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->devPtr));
      call.bytes = p->size;
      break;
    }
    case Api::cudaMallocPitch: {
      auto* p = static_cast<const cudaMallocPitch_v3020_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->devPtr));
      call.bytes = static_cast<uint64_t>(deref(p->pitch)) * p->height;
      break;
    }
    case Api::cudaMalloc3D: {
      auto* p = static_cast<const cudaMalloc3D_v3020_params*>(params);
      if (p->pitchedDevPtr) {
        call.key = reinterpret_cast<uint64_t>(p->pitchedDevPtr->ptr);
        call.bytes = p->pitchedDevPtr->pitch * at_least_one(p->extent.height) * at_least_one(p->extent.depth);
      }
      break;
    }
    case Api::cudaMallocArray: {
      auto* p = static_cast<const cudaMallocArray_v3020_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->array));
      call.bytes = at_least_one(p->width) * at_least_one(p->height) * channel_bytes(p->desc);
      break;
    }
    case Api::cudaMalloc3DArray: {
      auto* p = static_cast<const cudaMalloc3DArray_v3020_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->array));
      call.bytes = mip_bytes(p->extent.width, p->extent.height, p->extent.depth, 1, channel_bytes(p->desc));
      break;
    }
    case Api::cudaMallocMipmappedArray: {
      auto* p = static_cast<const cudaMallocMipmappedArray_v5000_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->mipmappedArray));
      call.bytes = mip_bytes(p->extent.width, p->extent.height, p->extent.depth, p->numLevels, channel_bytes(p->desc));
      break;
    }
    case Api::cudaMallocManaged: {
      auto* p = static_cast<const cudaMallocManaged_v6000_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->devPtr));
      call.bytes = p->size;
      break;
    }
    case Api::cudaMallocHost: {
      auto* p = static_cast<const cudaMallocHost_v3020_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->ptr));
      call.bytes = p->size;
      break;
    }
    case Api::cudaHostAlloc: {
      auto* p = static_cast<const cudaHostAlloc_v3020_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->pHost));
      call.bytes = p->size;
      break;
    }
    case Api::cudaHostRegister: {
      auto* p = static_cast<const cudaHostRegister_v4000_params*>(params);
      call.key = reinterpret_cast<uint64_t>(p->ptr);
      call.bytes = p->size;
      break;
    }
    case Api::cudaMallocAsync: {  // the _ptsz variant has the same layout
      auto* p = static_cast<const cudaMallocAsync_v11020_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->devPtr));
      call.bytes = p->size;
      break;
    }
    case Api::cudaMallocFromPoolAsync: {
      auto* p = static_cast<const cudaMallocFromPoolAsync_v11020_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->ptr));
      call.bytes = p->size;
      break;
    }
    case Api::cudaFree:
      call.key = reinterpret_cast<uint64_t>(static_cast<const cudaFree_v3020_params*>(params)->devPtr);
      break;
    case Api::cudaFreeHost:
      call.key = reinterpret_cast<uint64_t>(static_cast<const cudaFreeHost_v3020_params*>(params)->ptr);
      break;
    case Api::cudaFreeArray:
      call.key = reinterpret_cast<uint64_t>(static_cast<const cudaFreeArray_v3020_params*>(params)->array);
      break;
    case Api::cudaFreeMipmappedArray:
      call.key = reinterpret_cast<uint64_t>(
          static_cast<const cudaFreeMipmappedArray_v5000_params*>(params)->mipmappedArray);
      break;
    case Api::cudaHostUnregister:
      call.key = reinterpret_cast<uint64_t>(static_cast<const cudaHostUnregister_v4000_params*>(params)->ptr);
      break;
    case Api::cudaFreeAsync:
      call.key = reinterpret_cast<uint64_t>(static_cast<const cudaFreeAsync_v11020_params*>(params)->devPtr);
      break;
    case Api::cuMemAlloc: {
      auto* p = static_cast<const cuMemAlloc_v2_params*>(params);
      call.key = deref(p->dptr);
      call.bytes = p->bytesize;
      break;
    }
    case Api::cuMemAllocPitch: {
      auto* p = static_cast<const cuMemAllocPitch_v2_params*>(params);
      call.key = deref(p->dptr);
      call.bytes = static_cast<uint64_t>(deref(p->pPitch)) * p->Height;
      break;
    }
    case Api::cuMemAllocManaged: {
      auto* p = static_cast<const cuMemAllocManaged_params*>(params);
      call.key = deref(p->dptr);
      call.bytes = p->bytesize;
      break;
    }
    case Api::cuMemAllocHost: {
      auto* p = static_cast<const cuMemAllocHost_v2_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->pp));
      call.bytes = p->bytesize;
      break;
    }
    case Api::cuMemHostAlloc: {
      auto* p = static_cast<const cuMemHostAlloc_params*>(params);
      call.key = reinterpret_cast<uint64_t>(deref(p->pp));
      call.bytes = p->bytesize;
      break;
    }
    case Api::cuMemHostRegister: {
      auto* p = static_cast<const cuMemHostRegister_v2_params*>(params);
      call.key = reinterpret_cast<uint64_t>(p->p);
      call.bytes = p->bytesize;
      break;
    }
    case Api::cuMemAllocAsync: {
      auto* p = static_cast<const cuMemAllocAsync_params*>(params);
      call.key = deref(p->dptr);
      call.bytes = p->bytesize;
      break;
    }
    case Api::cuMemAllocFromPoolAsync: {
      auto* p = static_cast<const cuMemAllocFromPoolAsync_params*>(params);
      call.key = deref(p->dptr);
      call.bytes = p->bytesize;
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
        call.bytes = mip_bytes(d->Width, d->Height, d->Depth, p->numMipmapLevels,
                               d->NumChannels * format_bytes(d->Format));
      break;
    }
    case Api::cuMemCreate: {
      auto* p = static_cast<const cuMemCreate_params*>(params);
      call.key = deref(p->handle);
      call.bytes = p->size;
      break;
    }
    case Api::cuMemAddressReserve: {
      auto* p = static_cast<const cuMemAddressReserve_params*>(params);
      call.key = deref(p->ptr);
      call.bytes = p->size;
      break;
    }
    case Api::cuMemMap: {
      auto* p = static_cast<const cuMemMap_params*>(params);
      call.key = p->ptr;
      call.bytes = p->size;
      break;
    }
    case Api::cuMemFree:
      call.key = static_cast<const cuMemFree_v2_params*>(params)->dptr;
      break;
    case Api::cuMemFreeHost:
      call.key = reinterpret_cast<uint64_t>(static_cast<const cuMemFreeHost_params*>(params)->p);
      break;
    case Api::cuMemHostUnregister:
      call.key = reinterpret_cast<uint64_t>(static_cast<const cuMemHostUnregister_params*>(params)->p);
      break;
    case Api::cuMemFreeAsync:
      call.key = static_cast<const cuMemFreeAsync_params*>(params)->dptr;
      break;
    case Api::cuArrayDestroy:
      call.key = reinterpret_cast<uint64_t>(static_cast<const cuArrayDestroy_params*>(params)->hArray);
      break;
    case Api::cuMipmappedArrayDestroy:
      call.key = reinterpret_cast<uint64_t>(
          static_cast<const cuMipmappedArrayDestroy_params*>(params)->hMipmappedArray);
      break;
    case Api::cuMemRelease:
      call.key = static_cast<const cuMemRelease_params*>(params)->handle;
      break;
    case Api::cuMemAddressFree: {
      auto* p = static_cast<const cuMemAddressFree_params*>(params);
      call.key = p->ptr;
      call.bytes = p->size;
      break;
    }
    case Api::cuMemUnmap: {
      auto* p = static_cast<const cuMemUnmap_params*>(params);
      call.key = p->ptr;
      call.bytes = p->size;
      break;
    }
    case Api::libc_free:  // host heap releases come from the LD_PRELOAD interposer, not CUPTI
    case Api::libc_realloc:
    case Api::cxx_delete:
    case Api::cxx_delete_array:
    case Api::Count:
      break;
  }
}

// Device ordinal of a context, cached for the last context this thread asked about.
int32_t device_of(CUcontext context, uint32_t context_uid) noexcept {
  thread_local uint32_t cached_uid = 0;
  thread_local int32_t cached_device = -2;
  if (!context) return -2;
  if (context_uid != 0 && context_uid == cached_uid) return cached_device;
  uint32_t device = 0;
  if (cuptiGetDeviceId(context, &device) != CUPTI_SUCCESS) return -2;
  cached_uid = context_uid;
  cached_device = static_cast<int32_t>(device);
  return cached_device;
}

// The pointers a failed copy or memset was given, so that the tool can tell when one is the
// garbage left by a failed allocation. False for other calls.
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

// Every other runtime call: only what it returned matters, and only at exit. Failures are rare
// and recorded with their stack; successes cost a load and a compare (unless call sites are
// recorded for --check-api-results).
void on_other_runtime_call(CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  if (data->callbackSite != CUPTI_API_EXIT || !data->functionReturnValue) return;
  const auto result = static_cast<int32_t>(*static_cast<const cudaError_t*>(data->functionReturnValue));
  const uint32_t domain = CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020 ||
      cbid == CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020) {
    if (result != cudaSuccess) on_runtime_call(CallFact::LastError, domain, cbid, data->functionName, result);
    return;
  }
  if (result != cudaSuccess) {
    // Polling (cudaStreamQuery, cudaEventQuery) answers "not yet" this way: not a failure, and
    // frequent enough to flood the trace.
    if (result == cudaErrorNotReady) return;
    uint64_t pointers[2];
    const bool copy = data->functionParams && copy_pointers(cbid, data->functionParams, pointers);
    on_runtime_call(CallFact::Failed, domain, cbid, data->functionName, result, copy ? &pointers : nullptr);
    return;
  }
  if (g_record_call_sites) on_runtime_call(CallFact::Site, domain, cbid, data->functionName, result);
}

using trace::LaunchPath;

// Runtime calls that pass kernel arguments: checked at ENTER, before the launch runs.
// Returns true when `cbid` is one of them.
bool on_runtime_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  const void* params = data->functionParams;
  const bool enter = data->callbackSite == CUPTI_API_ENTER;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphKernelNodeSetParams_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010:
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddKernelNode_v10000:
      tls.adding_nodes = enter ? LaunchPath::cudaGraphAddKernelNode : LaunchPath::cuGraphAddKernelNode;
      return false;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12030:
      tls.adding_nodes = enter ? LaunchPath::cudaGraphAddNode : LaunchPath::cuGraphAddKernelNode;
      return false;
    default:
      return false;
  }
  tls.in_runtime_launch = enter;
  if (!params) return true;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
      auto* p = static_cast<const cudaLaunchKernel_v7000_params*>(params);
      if (enter) check_launch(LaunchPath::cudaLaunchKernel, p->func, data->symbolName, p->args, nullptr);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      auto* p = static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(params);
      if (enter) check_launch(LaunchPath::cudaLaunchCooperativeKernel, p->func, data->symbolName, p->args, nullptr);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      auto* p = static_cast<const cudaLaunchKernelExC_v11060_params*>(params);
      if (enter) check_launch(LaunchPath::cudaLaunchKernelExC, p->func, data->symbolName, p->args, nullptr);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphKernelNodeSetParams_v10000: {
      // The node's new arguments are read back from the driver once they are set.
      auto* p = static_cast<const cudaGraphKernelNodeSetParams_v10000_params*>(params);
      if (!enter && data->functionReturnValue && *static_cast<const cudaError_t*>(data->functionReturnValue) == cudaSuccess)
        check_graph_node(LaunchPath::cudaGraphKernelNodeSetParams, reinterpret_cast<CUgraphNode>(p->node));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010: {
      auto* p = static_cast<const cudaGraphExecKernelNodeSetParams_v10010_params*>(params);
      if (enter && p->pNodeParams)
        check_graph_exec_update(LaunchPath::cudaGraphExecKernelNodeSetParams, reinterpret_cast<CUgraphNode>(p->node),
                                nullptr, p->pNodeParams->kernelParams, p->pNodeParams->extra);
      break;
    }
    default:
      break;
  }
  return true;
}

// Driver launches made by the program itself (not on behalf of a runtime launch).
void on_driver_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  if (tls.in_runtime_launch || !data->functionParams) return;
  const void* params = data->functionParams;
  const bool enter = data->callbackSite == CUPTI_API_ENTER;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      auto* p = static_cast<const cuLaunchKernel_params*>(params);
      if (enter) check_launch(LaunchPath::cuLaunchKernel, p->f, data->symbolName, p->kernelParams, p->extra);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
      if (enter) check_launch(LaunchPath::cuLaunchKernelEx, p->f, data->symbolName, p->kernelParams, p->extra);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(params);
      if (enter) check_launch(LaunchPath::cuLaunchCooperativeKernel, p->f, data->symbolName, p->kernelParams, nullptr);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2: {
      auto* p = static_cast<const cuGraphKernelNodeSetParams_v2_params*>(params);
      if (!enter && data->functionReturnValue && *static_cast<const CUresult*>(data->functionReturnValue) == CUDA_SUCCESS)
        check_graph_node(LaunchPath::cuGraphKernelNodeSetParams, p->hNode);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2: {
      auto* p = static_cast<const cuGraphExecKernelNodeSetParams_v2_params*>(params);
      if (enter && p->nodeParams)
        check_graph_exec_update(LaunchPath::cuGraphExecKernelNodeSetParams, p->hNode, p->nodeParams->func,
                                p->nodeParams->kernelParams, p->nodeParams->extra);
      break;
    }
    default:
      break;
  }
}

// Driver calls that pass kernel arguments. Every runtime launch makes one of these too (nested),
// so their callbacks double the cost of every launch: they are enabled only once the program
// itself takes hold of a kernel handle the driver API can launch (below).
constexpr CUpti_CallbackId kDriverLaunchCbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2, CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
};

// Rare driver calls, always enabled: those that copy graph nodes, and those that hand the program
// a kernel handle (the runtime makes them too, inside its own calls; the program's own use means
// it may launch through the driver API).
constexpr CUpti_CallbackId kDriverGraphCopyCbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,       CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz, CUPTI_DRIVER_TRACE_CBID_cuGraphClone,
};
constexpr CUpti_CallbackId kDriverHandleCbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction,   CUPTI_DRIVER_TRACE_CBID_cuModuleEnumerateFunctions,
    CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel,    CUPTI_DRIVER_TRACE_CBID_cuLibraryEnumerateKernels,
    CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
};


void enable_driver_launch_checks() noexcept {
  static std::atomic<bool> enabled{false};
  if (enabled.exchange(true)) return;
  for (CUpti_CallbackId cbid : kDriverLaunchCbids) cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
}

// The program took a kernel handle it could give to cuLaunchKernel: from the driver API
// (cuModuleGetFunction, cuLibraryGetKernel, ...) or from the runtime (cudaGetFuncBySymbol,
// cudaGetKernel, cudaLibraryGetKernel).
bool hands_out_kernel_handles(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetFuncBySymbol_v11000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetKernel_v12000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLibraryGetKernel_v12060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLibraryEnumerateKernels_v12060;
  }
  for (CUpti_CallbackId c : kDriverHandleCbids) {
    if (c == cbid) return tls.runtime_depth == 0;
  }
  return false;
}

void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  if (!data) return;
  if (g_check_launches) {
    if (copies_graph_nodes(domain, cbid)) tls.copying_nodes = data->callbackSite == CUPTI_API_ENTER;
    if (data->callbackSite == CUPTI_API_ENTER && hands_out_kernel_handles(domain, cbid)) enable_driver_launch_checks();
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && on_runtime_launch(cbid, data) &&
        data->callbackSite == CUPTI_API_ENTER) {
      return;
    }
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && lookup(domain, cbid) < 0) return on_driver_launch(cbid, data);
  }
  const int16_t id = lookup(domain, cbid);
  if (id < 0) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) on_other_runtime_call(cbid, data);
    return;
  }
  const Api api = static_cast<Api>(id);
  if (data->callbackSite == CUPTI_API_ENTER) {
    on_call_enter(api);
    return;
  }
  ApiCall call{api};
  if (data->functionReturnValue) {
    call.result = domain == CUPTI_CB_DOMAIN_RUNTIME_API
                      ? static_cast<int32_t>(*static_cast<const cudaError_t*>(data->functionReturnValue))
                      : static_cast<int32_t>(*static_cast<const CUresult*>(data->functionReturnValue));
  }
  decode(api, data->functionParams, call);
  call.context_uid = data->contextUid;
  call.device = device_of(data->context, data->contextUid);
  if (on_call_exit(call) && call.result == 0 && !is_host_family(api_info(api).family)) {
    sample_after_memory_change(call.device);
  }
}

void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) noexcept {
  // CU_INIT_FINISHED arrives with no data at all.
  if (!data) return;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    // A kernel node added explicitly; one made by stream capture was checked at its launch.
    const auto* graph = static_cast<const CUpti_GraphData*>(data->resourceDescriptor);
    if (!tls.in_runtime_launch && !tls.copying_nodes && graph && graph->nodeType == CU_GRAPH_NODE_TYPE_KERNEL &&
        !graph->originalNode && !graph->graphExec)
      check_graph_node(tls.adding_nodes, graph->node);
    return;
  }
  if (!data->context) return;
  if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED && cbid != CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) return;
  uint32_t uid = 0;
  if (cuptiGetContextId(data->context, &uid) != CUPTI_SUCCESS) return;
  const int32_t device = device_of(data->context, uid);
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    on_context_created(uid, device);
    sampler_context_created(data->context, device);
  } else {
    sampler_context_destroying(data->context);
    on_context_destroyed(uid, device);
  }
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  // A disabled writer (forked child, unwritable trace) records nothing: skip all work.
  if (tls.in_callback || !trace_writer().enabled()) return;
  tls.in_callback = true;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    on_resource(cbid, static_cast<const CUpti_ResourceData*>(data));
  } else {
    const auto* api = static_cast<const CUpti_CallbackData*>(data);
    const bool runtime_enter = domain == CUPTI_CB_DOMAIN_RUNTIME_API && api && api->callbackSite == CUPTI_API_ENTER;
    if (runtime_enter) ++tls.runtime_depth;
    on_api(domain, cbid, api);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && api && api->callbackSite == CUPTI_API_EXIT && tls.runtime_depth > 0)
      --tls.runtime_depth;
  }
  tls.in_callback = false;
}

}  // namespace

bool subscribe_callbacks(bool record_call_sites, bool check_launches, char* error, size_t error_bytes) noexcept {
  g_record_call_sites = record_call_sites;
  g_check_launches = check_launches;
  memset(&g_lookup, 0xff, sizeof g_lookup);
  for (const CallbackId& t : kTracked) {
    int16_t* slot = t.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? g_lookup.runtime : g_lookup.driver;
    slot[t.cbid] = static_cast<int16_t>(t.api);
  }

  char other_tool[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "cuaudit";
  params.oldSubscriberName = other_tool;
  params.oldSubscriberSize = sizeof other_tool;
  const CUptiResult rc = cuptiSubscribe_v2(&g_subscriber, callback, nullptr, &params);
  if (rc != CUPTI_SUCCESS) {
    const char* reason = nullptr;
    cuptiGetResultString(rc, &reason);
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      snprintf(error, error_bytes,
               "another CUDA tool (%s) already holds the CUPTI subscriber slot (CUPTI error %d); "
               "cuaudit cannot track this process: run it without compute-sanitizer, Nsight or other profilers",
               // CUPTI writes "<not provided>" when the other tool gave no name.
               other_tool[0] && other_tool[0] != '<' ? other_tool : "compute-sanitizer, Nsight or a profiler",
               static_cast<int>(rc));
    } else {
      snprintf(error, error_bytes, "cuptiSubscribe failed: %s (CUPTI error %d)", reason ? reason : "unknown",
               static_cast<int>(rc));
    }
    return false;
  }
  // Every runtime entry point: any of them can fail, and failures are what the unchecked-error
  // check judges. Ids that do not exist in this CUPTI are refused and skipped.
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  }
  for (const CallbackId& t : kTracked) {
    if (cuptiEnableCallback(1, g_subscriber, t.domain, t.cbid) != CUPTI_SUCCESS) {
      snprintf(error, error_bytes, "cannot enable CUPTI callback %u of domain %d", static_cast<unsigned>(t.cbid),
               static_cast<int>(t.domain));
      return false;
    }
  }
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  if (check_launches) {
    for (CUpti_CallbackId cbid : kDriverGraphCopyCbids) cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    for (CUpti_CallbackId cbid : kDriverHandleCbids) cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
  }
  return true;
}

}  // namespace cuaudit::inject
