"""A test of train.py for the e2e: **Profile this function in a run…** lists it (pytest
collects it with the workspace's python.testing settings), first, as it imports train."""

import torch
from train import Attention


def test_attention_keeps_the_shape() -> None:
    attention = Attention(32, 4)
    x = torch.randn(2, 8, 32)
    mask = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=1)
    assert attention(x, mask).shape == x.shape
