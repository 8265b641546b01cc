"""A tiny transformer block trained for a few steps on a synthetic dataset: the example of
``torchscope run`` (docs/real-inputs.md).

    torchscope run --target examples/real_inputs/train.py::Attention.forward \\
        -- python examples/real_inputs/train.py

``Attention.forward`` takes real activations (the embedding of real batches, through a
LayerNorm) and is reached through ``nn.Module.__call__``: a call expression could not build
them. ``--workers N`` loads the batches in N DataLoader worker processes.
"""

from __future__ import annotations

import argparse
import math

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

VOCAB, WIDTH, HEADS, LENGTH = 256, 128, 4, 64


class Tokens(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Random token sequences; the target is the next token."""

    def __init__(self, size: int, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.data = torch.randint(0, VOCAB, (size, LENGTH + 1), generator=generator)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        row = self.data[index]
        return row[:-1], row[1:]


class Attention(nn.Module):
    """Multi-head causal self-attention."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=-1)
        q = q.view(batch, length, self.heads, -1).transpose(1, 2)
        k = k.view(batch, length, self.heads, -1).transpose(1, 2)
        v = v.view(batch, length, self.heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(mask, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.norm1 = nn.LayerNorm(WIDTH)
        self.attention = Attention(WIDTH, HEADS)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))
        self.head = nn.Linear(WIDTH, VOCAB)
        mask = torch.triu(torch.ones(LENGTH, LENGTH, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        x = x + self.attention(self.norm1(x), self.mask)
        x = x + self.mlp(self.norm2(x))
        return self.head(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Block()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(Tokens(16 * args.steps), batch_size=16, num_workers=args.workers)
    for step, (tokens, targets) in enumerate(loader):
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
