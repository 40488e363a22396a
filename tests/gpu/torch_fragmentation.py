# PyTorch's caching allocator cut into holes, then out of memory (check_fragmentation.py runs it):
# one segment of nearly all the device's free memory split into 12 tensors, every other one freed
# (half the segment free, in holes of a twelfth), then a request larger than any hole and larger
# than what the device has left: the cache cannot serve it and cudaMalloc fails. PyTorch's own
# message says how much was "reserved but unallocated"; cuaudit's out_of_memory verdict must say
# fragmentation inside the cache, measured, at the @ask line.
import torch

GiB = 1 << 30
free, total = torch.cuda.mem_get_info()
segment = (free - 20 * GiB) // (12 * 2 * 1024 * 1024) * 12 * 2 * 1024 * 1024  # 12 equal parts, 2 MiB rounding
x = torch.empty(segment, dtype=torch.uint8, device="cuda")
del x  # one cached segment
parts = [torch.empty(segment // 12, dtype=torch.uint8, device="cuda") for _ in range(12)]
kept = parts[1::2]  # @keep
del parts
left, _ = torch.cuda.mem_get_info()
request = left + 4 * GiB  # more than the device has left, less than the cache's holes together
assert request > segment // 12 and request < segment // 2
try:
    y = torch.empty(request, dtype=torch.uint8, device="cuda")  # @ask
    print("unexpected: the request fit")
except torch.OutOfMemoryError as e:
    print("PyTorch:", str(e).splitlines()[0][:400])
print("reserved %.1f GiB, allocated %.1f GiB" % (torch.cuda.memory_reserved() / GiB, torch.cuda.memory_allocated() / GiB))
