# A two-process DDP training loop with NCCL, one GPU per rank (started by torchrun). Checked by
# tests/gpu/check_torch_ddp.py: each rank's report is on its own device and passes the gate.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
torch.manual_seed(0)
model = DistributedDataParallel(
    torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda(),
    device_ids=[local_rank])
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256, device="cuda")
y = torch.randint(0, 10, (64,), device="cuda")
for step in range(20):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
torch.cuda.synchronize()
print("rank %d final loss %.4f" % (dist.get_rank(), loss.item()))
dist.destroy_process_group()
