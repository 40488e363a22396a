// One MPI rank per GPU (no MPI library needed: the rank comes from the launcher's environment).
// Each rank leaks on its own device; run by scripts/run-gpu-tests.sh under mpirun with
// `cuaudit --output run-%q{OMPI_COMM_WORLD_RANK}` and `cuaudit merge`. Run alone it is rank 0.
// EXPECT: leak api=cudaMalloc bytes=1048576 count=1 device=0 at=@kept
// EXPECT-EXIT: 0
#include <cstdlib>

#include "cuda_check.h"

int main() {
  const char* rank_text = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const int rank = rank_text ? std::atoi(rank_text) : 0;
  int devices = 0;
  CHECK(cudaGetDeviceCount(&devices));
  CHECK(cudaSetDevice(rank % devices));
  void* kept = nullptr;
  // Never freed: rank r leaks r+1 MiB on device r.
  CHECK(cudaMalloc(&kept, (rank + 1) << 20));  // @kept
  std::printf("rank %d on device %d\n", rank, rank % devices);
  return 0;
}
