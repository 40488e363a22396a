# A numba-cuda workload: kernels of its own (@cuda.jit), a reduction and device arrays from numba's
# memory manager (which defers frees: a dropped array is freed in a later batch), over 40 steps.
# --leak keeps every step's result on the device.
import math
import sys

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda registers this alias of vstack, gone in NumPy 2.4
    np.row_stack = np.vstack
from numba import cuda  # noqa: E402

leak = "--leak" in sys.argv


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def smooth(x, out):
    i = cuda.grid(1)
    if 0 < i < x.size - 1:
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0


@cuda.reduce
def total(a, b):
    return a + b


n = 1 << 20
threads = 256
blocks = math.ceil(n / threads)
x = cuda.to_device(np.linspace(0.0, 1.0, n, dtype=np.float32))
y = cuda.to_device(np.ones(n, dtype=np.float32))
kept = []
sums = 0.0
for step in range(40):
    out = cuda.device_array(n, dtype=np.float32)
    saxpy[blocks, threads](np.float32(0.5), x, y, out)
    smoothed = cuda.device_array_like(out)
    smooth[blocks, threads](out, smoothed)
    sums += total(smoothed)
    if leak:
        kept.append(cuda.to_device(np.full(n, step, dtype=np.float32)))  # @leak
cuda.synchronize()
print("result: numba, %d steps, finite %s, kept %d" % (40, math.isfinite(sums), len(kept)))
