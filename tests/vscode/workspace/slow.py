"""A slow function, to cancel from the progress notification."""

import time

import torch


# torchscope: slow(torch.ones(4))
def slow(x):
    time.sleep(1.0)
    return torch.add(x, 1)
