"""A PyTorch MLP training step (forward, backward, SGD step) on the GPU, as the issue's benchmark:
prints the median time per step over the timed steps, and the process's peak resident memory."""
import resource
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
x = torch.randn(256, 1024, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")


def step():
    optimizer.zero_grad(set_to_none=True)
    loss_fn(model(x), y).backward()
    optimizer.step()


for _ in range(20):  # warm-up: cuBLAS handles, the caching allocator's segments, lazy modules
    step()
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(steps):
    step()
torch.cuda.synchronize()
ms = (time.perf_counter() - start) * 1e3 / steps
print("torch_step: %d steps, %.4f ms per step" % (steps, ms))
print("max RSS %d KiB" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
