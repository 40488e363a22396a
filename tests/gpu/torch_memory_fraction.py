# PyTorch refusing memory itself (check_fragmentation.py --cap-script runs it): with
# torch.cuda.set_per_process_memory_fraction the caching allocator raises torch.OutOfMemoryError
# before asking CUDA, so no CUDA call fails. cuaudit reports it from PyTorch's own history: one
# out_of_memory at the @ask line whose verdict is the cap.
import torch

GiB = 1 << 30
torch.cuda.set_per_process_memory_fraction(0.05)  # about 7 GiB of an H200
x = torch.empty(2 * GiB, dtype=torch.uint8, device="cuda")
try:
    y = torch.empty(8 * GiB, dtype=torch.uint8, device="cuda")  # @ask
    print("unexpected: the request fit")
except torch.OutOfMemoryError as e:
    print("PyTorch:", str(e).splitlines()[0][:300])
