# What JAX tells of its device memory, printed (a probe for cuaudit's JAX hook, run on the H200):
# live arrays with their buffers and creation tracebacks, the allocator's statistics, the device
# memory profile, and how an out-of-memory error looks.
import sys
import time

import jax
import jax.numpy as jnp

print("python", sys.version.split()[0], "jax", jax.__version__, "jaxlib", jax.lib.__version__ if hasattr(jax.lib, "__version__") else "?")
d = jax.devices()[0]
print("device", d, d.platform, getattr(d, "device_kind", ""))
print("stats at start", d.memory_stats())
a = jnp.ones((1024, 1024), dtype=jnp.float32)  # the probe's line
arrays = jax.live_arrays()
print("live arrays", len(arrays), type(arrays[0]))
x = arrays[0]
print("attrs", [n for n in dir(x) if "trace" in n.lower() or "buffer" in n.lower() or "pointer" in n.lower()])
try:
    print("pointer", hex(x.unsafe_buffer_pointer()), "nbytes", x.nbytes, "devices", x.devices())
except Exception as e:
    print("pointer failed", repr(e))
tb = getattr(x, "traceback", None)
print("traceback type", type(tb))
if tb is not None:
    print("traceback str", str(tb)[:800])
    try:
        print("frames", [(f.file_name, f.line_num, f.function_name) for f in tb.frames][:8])
    except Exception as e:
        print("frames failed", repr(e))
try:
    print("shards", [(hex(s.data.unsafe_buffer_pointer()), s.data.nbytes) for s in x.addressable_shards])
except Exception as e:
    print("shards failed", repr(e))
many = [jnp.full((256,), float(i)) for i in range(2000)]
start = time.perf_counter()
for _ in range(10):
    live = jax.live_arrays()
print("live_arrays with %d arrays: %.3f ms each" % (len(live), (time.perf_counter() - start) * 100))
start = time.perf_counter()
for _ in range(10):
    ptrs = [(y.unsafe_buffer_pointer(), y.nbytes, y.traceback) for y in jax.live_arrays()]
print("pointer+nbytes+traceback for all: %.3f ms each" % ((time.perf_counter() - start) * 100))
try:
    prof = jax.profiler.device_memory_profile()
    print("device_memory_profile", len(prof), "bytes", prof[:4])
except Exception as e:
    print("device_memory_profile failed", repr(e))
print("stats now", d.memory_stats())
try:
    huge = jnp.ones((200 * 1024 ** 3 // 4,), dtype=jnp.float32)
    huge.block_until_ready()
    print("no OOM?")
except Exception as e:
    print("OOM type", type(e), type(e).__module__, type(e).__mro__)
    print("OOM message", str(e)[:1500])
    tb = e.__traceback__
    frames = []
    while tb:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    print("OOM traceback", frames[-6:])
print("stats after OOM", d.memory_stats())
# Not probed: filling the allocator with many arrays from an asynchronous loop. On the H200 (JAX
# 0.11.2) XLA's allocator then waits for memory instead of failing, warning every 10 s, for minutes.
print("sys.monitoring", hasattr(sys, "monitoring"))
