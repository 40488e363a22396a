# torch.compile (Inductor, Triton kernels) on a small MLP, trained a few steps. --leak keeps every
# step's output on the device.
import sys

import torch

leak = "--leak" in sys.argv
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()
compiled = torch.compile(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(512, 256, device="cuda")
kept = []
for step in range(30):
    optimizer.zero_grad(set_to_none=True)
    out = compiled(x)
    loss = (out - x).pow(2).mean()
    loss.backward()
    optimizer.step()
    if leak:
        kept.append(out.detach().clone())  # @leak
torch.cuda.synchronize()
print("result: compile, %d steps, loss finite %s, kept %d" % (30, bool(torch.isfinite(loss)), len(kept)))
