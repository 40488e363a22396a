# A small PyTorch test suite for the pytest plugin on the GPU machine. One test leaks the way a
# custom CUDA extension does (cudaMalloc through the CUDA runtime PyTorch loaded, never freed); the
# others train and compute with PyTorch, whose own caching allocator holds its memory on purpose
# (held_by_allocator, not a finding).
import ctypes

import torch


def test_linear_step():
    model = torch.nn.Linear(256, 256).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(64, 256, device="cuda")
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    assert torch.isfinite(loss).item()


def test_extension_leaks():
    torch.cuda.init()
    cudart = ctypes.CDLL("libcudart.so.13")  # the one PyTorch loaded
    pointer = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(pointer), ctypes.c_size_t(8 << 20)) == 0  # never freed


def test_matmul():
    a = torch.ones(512, 512, device="cuda")
    assert (a @ a)[0, 0].item() == 512.0
