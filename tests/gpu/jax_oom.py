# JAX runs out of memory: arrays kept in a list (@fill) take XLA's allocator close to its limit,
# then one array larger than what is left is asked for (@request). The program catches XLA's
# RESOURCE_EXHAUSTED error and exits 0; cuaudit must report one out_of_memory at @request, with
# XLA's own figures, the verdict that the program's arrays filled the allocator, and @fill as the
# top holder. --too-large (run with XLA_PYTHON_CLIENT_MEM_FRACTION=0.5) asks at once for more than
# XLA may hold but less than the device has (@toolarge): the verdict is that the request alone is
# larger than all XLA's allocator may hold.
import sys

import jax
import jax.numpy as jnp

device = jax.devices()[0]
limit = device.memory_stats()["bytes_limit"]
if "--too-large" in sys.argv:
    try:
        huge = jnp.zeros((limit * 3 // 2 // 4,), dtype=jnp.float32); huge.block_until_ready()  # @toolarge
        print("no out-of-memory error")
    except Exception as error:  # jax.errors.JaxRuntimeError
        print("caught:", str(error).splitlines()[0][:160])
    sys.exit(0)
chunk = 8 << 30
kept = []
while device.memory_stats()["bytes_in_use"] + 2 * chunk < limit:
    kept.append(jnp.ones((chunk // 4,), dtype=jnp.float32))  # @fill
    kept[-1].block_until_ready()
left = limit - device.memory_stats()["bytes_in_use"]
try:
    # JAX dispatches asynchronously: the error comes where the program waits for the array.
    big = jnp.zeros(((left + chunk) // 4,), dtype=jnp.float32); big.block_until_ready()  # @request
    print("no out-of-memory error")
except Exception as error:  # jax.errors.JaxRuntimeError
    print("caught:", str(error).splitlines()[0][:160])
print("kept %d arrays of %d GiB" % (len(kept), chunk >> 30))
