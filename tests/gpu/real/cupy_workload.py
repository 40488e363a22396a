# A CuPy workload: FFTs, a matrix product, a reduction and an ElementwiseKernel of its own, over
# 40 steps from CuPy's default memory pool. --leak keeps every step's result on the device.
import sys

import cupy as cp

leak = "--leak" in sys.argv
scale = cp.ElementwiseKernel("float32 x, float32 s", "float32 y", "y = x * s + 0.5f", "scale")
rng = cp.random.default_rng(0)
signal = rng.standard_normal((256, 4096), dtype=cp.float32)
weights = rng.standard_normal((4096, 512), dtype=cp.float32)
kept = []
total = 0.0
for step in range(40):
    spectrum = cp.fft.rfft(signal, axis=1)
    filtered = cp.fft.irfft(spectrum * 0.5, n=4096, axis=1).astype(cp.float32)
    projected = scale(filtered @ weights, cp.float32(0.01))
    total += float(projected.sum())
    if leak:
        kept.append(cp.tanh(projected))  # @leak
cp.cuda.Device().synchronize()
print("result: cupy, %d steps, finite %s, kept %d" % (40, bool(cp.isfinite(cp.float32(total))), len(kept)))
