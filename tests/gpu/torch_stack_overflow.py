# A PyTorch process whose C stack overflows, with Python's faulthandler on (as pytest turns it on):
# faulthandler's own SIGSEGV handler runs on its alternate stack and prints the Python traceback,
# under cuaudit as without it. Checked by tests/gpu/check_faulthandler.py.
import faulthandler

import torch

faulthandler.enable()
kept = torch.zeros(1 << 20, device="cuda")  # a CUDA allocation, live when the process dies
torch.cuda.synchronize()
faulthandler._stack_overflow()  # CPython's own test helper: recurses in C until the stack overflows
