"""Functions whose time sits on particular lines: what the hot-line hints show.

Profile `hot_and_cold` and the matmul line gets nearly all the time and the only hint.
"""

import torch
from helpers import scale_up


# torchscope: hot_and_cold(torch.randn(512, 512), torch.randn(512, 512), torch.randn(4))
def hot_and_cold(a, b, small):
    product = a @ b  # the hot line: a 512×512 matmul
    bump = small + 1  # a tiny add
    return product, bump


# torchscope: loop(torch.randn(64, 64), 4)
def loop(x, n):
    total = torch.zeros_like(x)
    for _ in range(n):
        total = total + x @ x
        total = total.relu()
    return total


# torchscope: early_return(torch.randn(256, 256))
def early_return(x):
    with torch.no_grad():
        y = x @ x
        if y.sum() > float("-inf"):
            return y.sigmoid()
        z = y * 2
    return z


# torchscope: closure_and_generator(torch.randn(128, 128))
def closure_and_generator(x):
    weight = torch.randn(128, 128)

    def project(v):
        return v @ weight

    parts = sum(t.sum() for t in (x, x * 2, x * 3))
    return project(x) + parts


# torchscope: calls_helper(torch.randn(256, 256))
def calls_helper(x):
    y = x + 1
    return scale_up(y)
