# A JAX workload: a jitted MLP trained with jax.grad for 400 steps, the loss printed every 50 as
# training loops do (XLA's default preallocation). --leak keeps every step's hidden activations of
# a slice of the batch on the device.
import sys

import jax
import jax.numpy as jnp

leak = "--leak" in sys.argv


def predict(params, x):
    hidden = jnp.tanh(x @ params[0])
    return hidden @ params[1]


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((predict(p, x) - y) ** 2))(params)
    return [p - 0.01 * g for p, g in zip(params, grads)], loss


key = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(key, 3)
params = [jax.random.normal(k1, (2048, 4096)) * 0.02, jax.random.normal(k2, (4096, 16)) * 0.02]
x = jax.random.normal(k3, (4096, 2048))
y = jnp.zeros((4096, 16))
kept = []
steps = 400
for step in range(steps):
    params, loss = train_step(params, x, y)
    if leak:
        kept.append(jnp.tanh(x[:128] @ params[0]))  # @leak
    if step % 50 == 0:
        print("step %d loss %.6f" % (step, float(loss)))
loss.block_until_ready()
print("result: jax, %d steps, loss finite %s, kept %d" % (steps, bool(jnp.isfinite(loss)), len(kept)))
