# PyTorch out of memory for the two reasons a user meets most (check_torch_oom.py runs it):
#   filled: the program keeps 8 GiB tensors in a list until the device is full; cuaudit's verdict
#           must be that the program's own tensors filled the device, with the @keep line holding
#           them, and the failure (PyTorch frees its cache and asks again) said once, at @ask.
#   other:  another process (check_torch_oom.py starts it, outside cuaudit) holds most of the
#           device; this one asks for more than is left: the verdict must name the other process.
import sys

import torch

GiB = 1 << 30
mode = sys.argv[1] if len(sys.argv) > 1 else "filled"
kept = []
try:
    if mode == "filled":
        while True:
            kept.append(torch.empty(8 * GiB, dtype=torch.uint8, device="cuda"))  # @keep @ask
    else:
        free, total = torch.cuda.mem_get_info()
        y = torch.empty(free + 8 * GiB, dtype=torch.uint8, device="cuda")  # @ask_other
        print("unexpected: the request fit")
except torch.OutOfMemoryError as e:
    print("PyTorch:", str(e).splitlines()[0][:300])
print("kept %d tensor(s), %.1f GiB" % (len(kept), sum(t.numel() for t in kept) / GiB))
