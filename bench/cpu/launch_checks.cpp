// The launch checker timed on the CPU, without CUDA (docs/PERFORMANCE.md, "Launch checks on the
// CPU"): the real check_launch (launch_checker.cpp, pointer_reachability.cpp) on the parameter
// layouts and values of a PyTorch training step's kernels, with a stand-in driver library
// (stand_in_driver.cpp) answering the few driver questions it asks. Each kernel's mangled name is
// the one PyTorch's signature gives (elementwise kernels with TensorIterator's offset calculators
// by value, a reduction's ReduceOp, the fused Adam's tensor lists, a cuBLAS kernel's one parameter
// struct), launched on three shapes in turn, as a step launches one kernel on each layer's tensors.
// Usage: bench_launch_checks STAND_IN_DRIVER [ROUNDS] [LAUNCHES_PER_ROUND]
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "alternating_rounds.h"
#include "call_recorder.h"
#include "driver_api.h"
#include "launch_checker.h"
#include "readable_mappings.h"
#include "stage_stats.h"
#include "stand_in_kernels.h"
#include "trace_writer.h"

using namespace cuaudit;
using namespace cuaudit::inject;
using cuaudit::bench::kSegmentStart;
using cuaudit::bench::StandInKernel;

namespace {

// The kernels, their parameters' offsets and sizes as the driver gives them.
const StandInKernel kFourPointers{"_Z6kernelPfS_S_S_", 4, {0, 8, 16, 24}, {8, 8, 8, 8}};
const StandInKernel kTorchKernels[] = {
    // vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, Array<char*, 3>>(int, functor, data)
    {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_",
     3,
     {0, 4, 8},
     {4, 4, 24}},
    // unrolled_elementwise_kernel<BUnaryFunctor<..., MulFunctor<float>>, Array<char*, 2>,
    // OffsetCalculator<1> x2, LoadWithCast<1>, StoreWithCast<1>>: the offset calculators by value
    {"_ZN2at6native27unrolled_elementwise_kernelINS0_13BUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEENS_"
     "6detail5ArrayIPcLi2EEENS_16OffsetCalculatorILi1EjLb0EEESC_NS0_6memory12LoadWithCastILi1EEENSD_"
     "13StoreWithCastILi1EEEEEviT_T0_T1_T2_T3_T4_",
     7,
     {0, 4, 16, 32, 436, 840, 848},
     {4, 8, 16, 404, 404, 8, 8}},
    // elementwise_kernel<128, 4, closure>(int, closure): the closure holds data and an OffsetCalculator<3>
    {"_ZN2at6native18elementwise_kernelILi128ELi4ENS0_30gpu_kernel_impl_nocast_closureEEEviT1_", 2, {0, 8}, {4, 640}},
    // reduce_kernel<512, 1, ReduceOp<float, MeanOps<...>, unsigned, float, 4>>(ReduceOp)
    {"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4EEEEEvT1_", 1, {0}, {1104}},
    // cunn_SoftMaxForward<4, float, float, float, SoftMaxForwardEpilogue>(float*, const float*, int)
    {"_ZN2at6native19cunn_SoftMaxForwardILi4EfffNS0_12_GLOBAL__N_122SoftMaxForwardEpilogueEEEvPT2_PKT0_i",
     3,
     {0, 8, 16},
     {8, 8, 4}},
    // multi_tensor_apply_kernel<TensorListMetadata<4>, FusedAdamMathFunctor<float, 4, 0, false>, double, double>
    {"_ZN2at6native25multi_tensor_apply_kernelINS0_12_GLOBAL__N_118TensorListMetadataILi4EEENS2_"
     "20FusedAdamMathFunctorIfLi4ELi0ELb0EEEJddEEEvlT_T0_DpT1_",
     5,
     {0, 8, 3056, 3064, 3072},
     {8, 3048, 1, 8, 8}},
    // a cuBLAS GEMM kernel: extern "C", one parameter struct
    {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
     "cublas",
     1,
     {0},
     {832}},
};
constexpr int kShapes = 3;

// One launch's arguments: its parameter buffer and the pointers to each parameter in it.
struct Launch {
  const StandInKernel* kernel;
  std::vector<unsigned char> buffer;
  void* params[8];
};

template <typename T>
void put(std::vector<unsigned char>& b, size_t at, T value) {
  memcpy(b.data() + at, &value, sizeof value);
}

// Tensors of shape `shape` carved from the segment, 512-byte aligned as the caching allocator hands
// them out; views one element in where PyTorch launches on slices.
uint64_t tensor(int shape, int n) { return kSegmentStart + (uint64_t(shape) << 24) + (uint64_t(n) << 16); }

// TensorIterator's OffsetCalculator<nargs>: dims, 25 IntDividers (divisor, magic, shift), 25 x nargs strides.
void offset_calculator(std::vector<unsigned char>& b, size_t at, int nargs, int shape) {
  const uint32_t sizes[2] = {uint32_t(256 << shape), uint32_t(64 + shape)};
  put<int32_t>(b, at, 2);
  for (int d = 0; d < 25; ++d) {
    const uint32_t divisor = d < 2 ? sizes[d] : 1;
    uint32_t shift = 0;
    while ((uint64_t{1} << shift) < divisor) ++shift;
    const uint32_t magic = uint32_t(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - divisor)) / divisor + 1);
    put<uint32_t>(b, at + 4 + 12 * d, divisor), put<uint32_t>(b, at + 8 + 12 * d, magic);
    put<uint32_t>(b, at + 12 + 12 * d, shift);
    for (int a = 0; a < nargs; ++a)
      put<uint32_t>(b, at + 304 + 4 * (d * nargs + a), d < 2 ? (d ? 4 : 4 * sizes[0]) : 0);
  }
}

// Each kernel's arguments on shape `shape`: pointers into the segment, sizes and strides of the
// shape, scalars. Fields follow PyTorch's structs where it matters which words look like pointers.
Launch arguments(const StandInKernel& k, int shape) {
  Launch l{&k, std::vector<unsigned char>(k.offsets[k.param_count - 1] + k.sizes[k.param_count - 1]), {}};
  std::vector<unsigned char>& b = l.buffer;
  const int numel = 1 << (14 + shape);
  if (k.param_count == 4) {  // four float*
    for (int i = 0; i < 4; ++i) put<uint64_t>(b, 8 * i, tensor(shape, i));
  } else if (&k == &kTorchKernels[0]) {
    put<int32_t>(b, 0, numel), put<float>(b, 4, 1.0f);
    for (int i = 0; i < 3; ++i) put<uint64_t>(b, 8 + 8 * i, tensor(shape, i));
  } else if (&k == &kTorchKernels[1]) {
    put<int32_t>(b, 0, numel), put<float>(b, 8, 0.5f);
    put<uint64_t>(b, 16, tensor(shape, 0)), put<uint64_t>(b, 24, tensor(shape, 1) + 4);  // a view
    offset_calculator(b, 32, 1, shape), offset_calculator(b, 436, 1, shape);
    put<uint32_t>(b, 840, 0x406), put<uint32_t>(b, 848, 0x406);  // dtypes and element sizes
  } else if (&k == &kTorchKernels[2]) {
    put<int32_t>(b, 0, numel);
    for (int i = 0; i < 3; ++i) put<uint64_t>(b, 8 + 8 * i, tensor(shape, i));
    offset_calculator(b, 32, 3, shape);
  } else if (&k == &kTorchKernels[3]) {
    for (int i = 0; i < 24; ++i) put<int32_t>(b, 4 * i, i % 3 ? 512 >> (i % 4) : 1 << shape);  // ReduceConfig
    offset_calculator(b, 96, 1, shape), offset_calculator(b, 500, 2, shape);
    put<uint64_t>(b, 1008, tensor(shape, 0)), put<uint64_t>(b, 1016, tensor(shape, 1));
    put<uint64_t>(b, 1032, 0), put<uint64_t>(b, 1040, 0);  // no accumulation or CTA buffers
    put<float>(b, 1056, 1.0f / numel), put<int32_t>(b, 1064, numel);
  } else if (&k == &kTorchKernels[4]) {
    put<uint64_t>(b, 0, tensor(shape, 0)), put<uint64_t>(b, 8, tensor(shape, 1)), put<int32_t>(b, 16, 10);
  } else if (&k == &kTorchKernels[5]) {
    put<int64_t>(b, 0, 65536);
    for (int list = 0; list < 4; ++list)
      for (int t = 0; t < 36; ++t) put<uint64_t>(b, 8 + 8 * (list * 36 + t), tensor(shape, list * 36 + t));
    for (int t = 0; t < 36; ++t) put<int64_t>(b, 8 + 1152 + 8 * t, 1 << (10 + t % 8));
    put<double>(b, 3064, 0.9), put<double>(b, 3072, 0.999);
  } else {  // cuBLAS: A, B, C, D, then sizes, leading dimensions, alpha, beta, splits
    for (int i = 0; i < 4; ++i) put<uint64_t>(b, 8 * i, tensor(shape, i));
    for (int i = 0; i < 64; ++i) put<int32_t>(b, 32 + 4 * i, (i % 5) ? 256 << shape : i);
    put<float>(b, 300, 1.0f), put<float>(b, 304, 0.0f);
  }
  for (size_t i = 0; i < k.param_count; ++i) l.params[i] = b.data() + k.offsets[i];
  return l;
}

void launch_all(const std::vector<Launch>& launches, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    const Launch& l = launches[i % launches.size()];
    check_launch(trace::LaunchPath::cudaLaunchKernel, l.kernel, l.kernel->name, l.params, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "usage: bench_launch_checks STAND_IN_DRIVER [ROUNDS] [LAUNCHES] (%s)\n", dlerror());
    return 2;
  }
  const int rounds = argc > 2 ? std::max(1, atoi(argv[2])) : 7;
  const uint64_t count = argc > 3 ? std::max(1ull, strtoull(argv[3], nullptr, 10)) : 200000;
  if (!cuaudit::bench::open_bench_trace("bench_launch_checks")) return 1;
  // BENCH_MAPPINGS=N: as many more mappings as a PyTorch process has (thousands; /proc/self/maps
  // grows with them), alternately readable and not so that none merge.
  for (long m = 0, n = getenv("BENCH_MAPPINGS") ? atol(getenv("BENCH_MAPPINGS")) : 0; m < n; ++m)
    mmap(nullptr, 4096, m % 2 ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  resolve_driver_api();  // finds the stand-in by its soname, as the injection finds libcuda.so.1
  if (!driver().kernel_get_param_info || !driver().pointer_get_attributes) {
    fprintf(stderr, "bench_launch_checks: %s is not found as libcuda.so.1 (its soname)\n", argv[1]);
    return 1;
  }
  if (getenv("CUAUDIT_STATS")) start_stage_stats();
  ApiCall segment{Api::cudaMalloc};  // the caching allocator's segment: the handed-out range
  segment.key = kSegmentStart, segment.bytes = cuaudit::bench::kSegmentBytes, segment.device = 0;
  on_call_enter(Api::cudaMalloc);
  on_call_exit(segment);
  std::vector<Launch> four_pointers, torch_step;
  for (int s = 0; s < kShapes; ++s) {
    four_pointers.push_back(arguments(kFourPointers, s));
    for (const StandInKernel& k : kTorchKernels) torch_step.push_back(arguments(k, s));
  }
  const auto launched = [](const std::vector<Launch>& launches) {
    return [&launches](uint64_t n) { cuaudit::bench::at_depth(20, [&] { launch_all(launches, n); }); };
  };
  // A kernel's first launches are checked in full (each word's first 64 looks, every value asked
  // about): timed once, cold, before the rounds.
  const uint64_t first = 64 * torch_step.size();
  const double start = cuaudit::bench::now_ns();
  launched(torch_step)(first);
  printf("the first %llu launches of the PyTorch step's kernels, once: %.1f ns per launch\n",
         static_cast<unsigned long long>(first), (cuaudit::bench::now_ns() - start) / static_cast<double>(first));
  std::vector<cuaudit::bench::Row> rows = {
      {"launch check: 4 float* parameters", launched(four_pointers), {}},
      {"launch check: a PyTorch step's 7 kernels on 3 shapes each", launched(torch_step), {}}};
  cuaudit::bench::run_alternating(rows, rounds, count, "launches", "launch");
  if (getenv("CUAUDIT_STATS"))
    log_launch_check_stats(), log_mapping_stats(),
        log_stage_stats();  // how many were checked in full, and where the time went
  return 0;
}
