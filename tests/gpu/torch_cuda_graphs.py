"""A training step captured into a CUDA graph with torch.cuda.graph and replayed: PyTorch gives the
graph a private memory pool and, since PyTorch 2.x, may use graph memory nodes. Under cuaudit with
default settings this must give no false findings (check_torch.py)."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
static_input = torch.randn(64, 256, device="cuda")
static_target = torch.randint(0, 10, (64,), device="cuda")

# Warm up on a side stream, as the PyTorch documentation asks before capture.
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(static_input), static_target).backward()
        optimizer.step()
torch.cuda.current_stream().wait_stream(side)

graph = torch.cuda.CUDAGraph()
optimizer.zero_grad(set_to_none=True)
with torch.cuda.graph(graph):
    static_loss = loss_fn(model(static_input), static_target)
    static_loss.backward()
    optimizer.step()

for step in range(20):
    static_input.copy_(torch.randn(64, 256, device="cuda"))
    static_target.copy_(torch.randint(0, 10, (64,), device="cuda"))
    graph.replay()
torch.cuda.synchronize()
print("loss after 20 replays: %.4f" % static_loss.item())

# Graphed callables: forward and backward each captured, used like the module.
graphed = torch.cuda.make_graphed_callables(model, (torch.randn(64, 256, device="cuda"),))
for _ in range(10):
    graphed(torch.randn(64, 256, device="cuda")).sum().backward()
torch.cuda.synchronize()
del graph
print("done")
