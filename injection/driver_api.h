// The CUDA driver functions cuaudit calls itself, looked up in the libcuda.so.1 that loaded us.
// Not linked: the launcher loads the injection to check it on machines without a driver, and an
// older driver may lack some of them (the feature that needs one is then skipped).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace cuaudit::inject {

struct DriverApi {
  decltype(&::cuMemGetInfo) mem_get_info = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuPointerGetAttributes) pointer_get_attributes = nullptr;
  decltype(&::cuMemGetAddressRange) mem_get_address_range = nullptr;
  decltype(&::cuFuncGetParamInfo) func_get_param_info = nullptr;
  decltype(&::cuKernelGetParamInfo) kernel_get_param_info = nullptr;
  decltype(&::cuFuncGetName) func_get_name = nullptr;
  decltype(&::cuKernelGetName) kernel_get_name = nullptr;
  decltype(&::cuGraphKernelNodeGetParams) graph_kernel_node_get_params = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetMemPool) device_get_mem_pool = nullptr;
  decltype(&::cuMemPoolGetAttribute) mem_pool_get_attribute = nullptr;
  decltype(&::cuDeviceGetPCIBusId) device_get_pci_bus_id = nullptr;
  decltype(&::cuCtxGetDevice) ctx_get_device = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceTotalMem) device_total_mem = nullptr;
  decltype(&::cuStreamGetCaptureInfo) stream_get_capture_info = nullptr;
  decltype(&::cuCtxGetLimit) ctx_get_limit = nullptr;
};

// The device that memory at `pointer` is on; kUnknownDevice (-1) when the driver cannot say.
int32_t device_ordinal_of(uint64_t pointer) noexcept;

// Resolved once, at InitializeInjection (the driver is loaded by then); null members are missing.
const DriverApi& driver() noexcept;
void resolve_driver_api() noexcept;

}  // namespace cuaudit::inject
