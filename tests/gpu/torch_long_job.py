# A PyTorch job that runs until it is stopped or killed (at most 60 s), keeping one 4 MiB tensor per
# step in a list: check_torch_live.py takes `cuaudit snapshot PID` while it runs and kills it with
# SIGKILL, and expects the tensors at the @keep line either way.
import time

import torch

kept = []
x = torch.randn(1024, 1024, device="cuda")
deadline = time.time() + 60
while time.time() < deadline:
    kept.append(torch.tanh(x))  # @keep
    torch.cuda.synchronize()
    if len(kept) == 3:
        print("running", flush=True)
    time.sleep(0.05)
