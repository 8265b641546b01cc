"""The guide's example: one matmul and one add — overhead-bound when small, compute-bound when big.

Profile it with `torchscope profile examples/matmul_add.py::fn` (each directive below runs in
turn) or right-click inside `fn` in VS Code and choose **Profile this function**.
"""

import torch


# torchscope: fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))
# torchscope: fn(torch.randn(1024, 1024), torch.randn(1024, 1024), torch.randn(1024, 1024))
# torchscope[cuda]: fn(torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda"))
# torchscope[cuda]: fn(torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda"))
def fn(x, w, b):
    return torch.add(torch.matmul(x, w), b)
