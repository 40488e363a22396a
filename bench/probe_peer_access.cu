// What the driver says about another device's memory, before and after peer access is enabled:
// CU_POINTER_ATTRIBUTE_ACCESS_FLAGS and DEVICE_ORDINAL as seen from device 0. A fact-finding
// probe for the peer_pointer_param check (run by scripts/run-gpu-tests.sh on machines with 2 GPUs).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>

static void show(const char* when, void* p) {
  unsigned long long access = 0;
  int ordinal = -1;
  unsigned int legacy = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
  void* data[] = {&access, &ordinal, &legacy};
  const CUresult rc = cuPointerGetAttributes(3, attributes, data, reinterpret_cast<CUdeviceptr>(p));
  std::printf("probe: %s: rc %d, access flags %llu, device ordinal %d, legacy IPC capable %u\n", when,
              static_cast<int>(rc), access, ordinal, legacy & 0xff);
}

int main() {
  int count = 0;
  cudaGetDeviceCount(&count);
  if (count < 2) {
    std::printf("probe: needs 2 GPUs, found %d\n", count);
    return 0;
  }
  void* remote = nullptr;
  cudaSetDevice(1);
  cudaMalloc(&remote, 1 << 20);
  cudaSetDevice(0);
  cudaFree(nullptr);  // device 0's context current
  show("device 1 memory from device 0, no peer access", remote);
  int can = 0;
  cudaDeviceCanAccessPeer(&can, 0, 1);
  std::printf("probe: cudaDeviceCanAccessPeer(0, 1) = %d, enable: %d\n", can,
              static_cast<int>(cudaDeviceEnablePeerAccess(1, 0)));
  show("device 1 memory from device 0, peer access enabled", remote);
  cudaSetDevice(1);
  cudaFree(nullptr);
  show("device 1 memory from device 1", remote);
  return 0;
}
