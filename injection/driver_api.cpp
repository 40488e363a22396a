#include "driver_api.h"

#include <dlfcn.h>

namespace cuaudit::inject {
namespace {

DriverApi g_driver;

// cuda.h maps names to their current versions (cuMemGetInfo -> cuMemGetInfo_v2): expand the
// macro before making it the symbol's name.
#define CUAUDIT_STRING(x) #x
#define CUAUDIT_SYMBOL(x) CUAUDIT_STRING(x)

template <typename F>
void resolve(void* library, F& out, const char* symbol) noexcept {
  out = reinterpret_cast<F>(dlsym(library, symbol));
}

}  // namespace

const DriverApi& driver() noexcept { return g_driver; }

void resolve_driver_api() noexcept {
  void* library = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!library) return;
  resolve(library, g_driver.mem_get_info, CUAUDIT_SYMBOL(cuMemGetInfo));
  resolve(library, g_driver.ctx_set_current, CUAUDIT_SYMBOL(cuCtxSetCurrent));
  resolve(library, g_driver.pointer_get_attributes, CUAUDIT_SYMBOL(cuPointerGetAttributes));
  resolve(library, g_driver.mem_get_address_range, CUAUDIT_SYMBOL(cuMemGetAddressRange));
  resolve(library, g_driver.func_get_param_info, CUAUDIT_SYMBOL(cuFuncGetParamInfo));
  resolve(library, g_driver.kernel_get_param_info, CUAUDIT_SYMBOL(cuKernelGetParamInfo));
  resolve(library, g_driver.func_get_name, CUAUDIT_SYMBOL(cuFuncGetName));
  resolve(library, g_driver.kernel_get_name, CUAUDIT_SYMBOL(cuKernelGetName));
  resolve(library, g_driver.graph_kernel_node_get_params, CUAUDIT_SYMBOL(cuGraphKernelNodeGetParams));
  resolve(library, g_driver.device_get, CUAUDIT_SYMBOL(cuDeviceGet));
  resolve(library, g_driver.device_get_mem_pool, CUAUDIT_SYMBOL(cuDeviceGetMemPool));
  resolve(library, g_driver.mem_pool_get_attribute, CUAUDIT_SYMBOL(cuMemPoolGetAttribute));
  resolve(library, g_driver.device_get_pci_bus_id, CUAUDIT_SYMBOL(cuDeviceGetPCIBusId));
  resolve(library, g_driver.ctx_get_device, CUAUDIT_SYMBOL(cuCtxGetDevice));
  resolve(library, g_driver.device_get_name, CUAUDIT_SYMBOL(cuDeviceGetName));
  resolve(library, g_driver.device_total_mem, CUAUDIT_SYMBOL(cuDeviceTotalMem));
  resolve(library, g_driver.stream_get_capture_info, CUAUDIT_SYMBOL(cuStreamGetCaptureInfo));
  resolve(library, g_driver.ctx_get_limit, CUAUDIT_SYMBOL(cuCtxGetLimit));
}

int32_t device_ordinal_of(uint64_t pointer) noexcept {
  if (!g_driver.pointer_get_attributes) return -1;
  int ordinal = -1;
  CUpointer_attribute attribute = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
  void* data[] = {&ordinal};
  return g_driver.pointer_get_attributes(1, &attribute, data, pointer) == CUDA_SUCCESS ? ordinal : -1;
}

}  // namespace cuaudit::inject
