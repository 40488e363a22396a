# CuPy's default memory pool under cuaudit (check_cupy.py runs each mode):
#   correct: a pool-heavy loop that reuses its blocks: no finding of severity error;
#   grow:    a loop that keeps every step's array in a list: growth at the @grow line;
#   raw:     memory from cupy.cuda.runtime.malloc never freed: a leak at the @raw line.
import sys

import cupy

mode = sys.argv[1]
x = cupy.random.random((512, 512), dtype=cupy.float32)
kept = []
for step in range(150):
    y = x @ x  # a temporary the pool takes back and hands out again
    z = cupy.tanh(y) + step
    if mode == "grow":
        kept.append(z * 2)  # @grow
    cupy.cuda.Device().synchronize()
if mode == "raw":
    raw = cupy.cuda.runtime.malloc(1 << 20)  # @raw
    cupy.cuda.runtime.memset(raw, 0, 1 << 20)
cupy.cuda.Device().synchronize()
print("%s: %d arrays kept, pool holds %d bytes" % (mode, len(kept), cupy.get_default_memory_pool().used_bytes()))
