# A model moved to the GPU, trained for a few steps and deleted, its optimizer with it: the
# caching allocator keeps its segments (held_by_allocator), every block is freed; no finding of
# severity error, no growth.
import gc

import torch

model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)).cuda()
optimizer = torch.optim.Adam(model.parameters())
x = torch.randn(256, 2048, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")
for step in range(20):
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
del model, optimizer, x, y
gc.collect()
torch.cuda.synchronize()
print("allocated after delete: %d bytes, reserved %d" % (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()))
