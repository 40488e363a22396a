# CuPy on managed memory (its own pool over cudaMallocManaged): CuPy's elementwise kernel and the
# host take turns on one array, so its pages migrate each step.
import ctypes
import numpy as np
import cupy as cp

cp.cuda.set_allocator(cp.cuda.MemoryPool(cp.cuda.malloc_managed).malloc)
n = 4 << 20
a = cp.ones(n, dtype=cp.float32)
host = np.ctypeslib.as_array((ctypes.c_float * n).from_address(a.data.ptr))
total = 0.0
for step in range(6):
    a *= 1.0001
    cp.cuda.Device().synchronize()
    total += float(host[::1024].sum())
print("total", total)
