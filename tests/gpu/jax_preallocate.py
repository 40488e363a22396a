# A correct JAX program with XLA's default preallocation (75% of the device taken at start-up by its
# BFC allocator): no finding of severity error.
import jax
import jax.numpy as jnp


@jax.jit
def step(w, x):
    return jnp.tanh(x @ w)


w = jnp.ones((1024, 1024), dtype=jnp.float32) * 0.001
x = jnp.ones((256, 1024), dtype=jnp.float32)
for _ in range(50):
    x = step(w, x)
x.block_until_ready()
print("jax", jax.__version__, float(x[0, 0]))
