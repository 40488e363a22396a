# A PyTorch training loop that keeps every step's activations in a list (with --keep) or does not.
# check_torch_growth.py runs both under cuaudit: the list's growth is attributed to the line that
# computes the activations; without the list the run passes the gate with only held_by_allocator
# entries (PyTorch's caching allocator keeps its segments until the process ends either way).
import sys

import torch

keep = "--keep" in sys.argv
torch.manual_seed(0)
body = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096), torch.nn.ReLU()).cuda()
head = torch.nn.Linear(4096, 10).cuda()
optimizer = torch.optim.SGD(list(body.parameters()) + list(head.parameters()), lr=0.01)
x = torch.randn(512, 1024, device="cuda")
y = torch.randint(0, 10, (512,), device="cuda")
kept = []
for step in range(60):
    optimizer.zero_grad()
    features = body(x)  # @features
    loss = torch.nn.functional.cross_entropy(head(features), y)
    loss.backward()
    optimizer.step()
    if keep:
        kept.append(features.detach())  # the bug: every step's activations stay alive
torch.cuda.synchronize()
print("final loss %.4f, kept %d activation tensors" % (loss.item(), len(kept)))
