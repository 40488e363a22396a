# PyTorch's normal operation under cuaudit: a small MLP trained for a few steps. Checked by
# scripts/run-gpu-tests.sh: the process is tracked and no unchecked_error is reported.
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256, device="cuda")
y = torch.randint(0, 10, (64,), device="cuda")
for step in range(20):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
torch.cuda.synchronize()
print("final loss %.4f" % loss.item())
