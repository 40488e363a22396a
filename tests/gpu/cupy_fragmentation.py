# CuPy's default memory pool cut into holes by mixed sizes (check_fragmentation.py runs it):
#   fragment: one 64 MiB chunk split into 1 MiB arrays, every other one dropped (32 holes of
#             1 MiB), then 2, 3 and 4 MiB requests: none fits, the pool takes new memory each time
#             although 32 MiB are free in it: a fragmentation warning at the @ask line;
#   uniform:  the same with every request 1 MiB: they fit the holes, no finding.
import sys

import cupy

mode = sys.argv[1]
MiB = 1 << 20
pool = cupy.get_default_memory_pool()
big = cupy.empty(64 * MiB, dtype=cupy.uint8)
del big  # one free 64 MiB chunk in the pool
# 64 blocks split out of it, every other one kept: the kept ones pin the holes.
arrays = [cupy.full(MiB // 4, i, dtype=cupy.float32) for i in range(64)]  # @keep
kept = arrays[1::2]
del arrays
asked = []
for size in ([2, 3, 4] * 4 if mode == "fragment" else [1] * 12):
    asked.append(cupy.ones(size * MiB // 4, dtype=cupy.float32))  # @ask
    cupy.cuda.Device().synchronize()
    if len(asked) > 4:
        asked.pop(0)
print("%s: pool holds %d bytes, uses %d" % (mode, pool.total_bytes(), pool.used_bytes()))
