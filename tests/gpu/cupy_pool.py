# CuPy's default memory pool under cuaudit (check_cupy.py runs each mode):
#   correct: a pool-heavy loop that reuses its blocks: no finding of severity error;
#   grow:    a loop that keeps every step's array in a list: growth at the @grow line;
#   raw:     memory from cupy.cuda.runtime.malloc never freed: a leak at the @raw line;
#   thread:  the growing loop on a worker thread started after the import: growth at @thread-grow.
import sys
import threading

import cupy

mode = sys.argv[1]
if mode == "thread":
    held = []

    def worker():
        w = cupy.random.random((512, 512), dtype=cupy.float32)
        for step in range(150):
            held.append(cupy.tanh(w @ w) + step)  # @thread-grow
            cupy.cuda.Device().synchronize()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    print("thread: %d arrays kept by the worker" % len(held))
    sys.exit(0)
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
