"""Two gloo ranks of a seeded CPU training loop for ``attach --all-ranks``: each step all-reduces
the gradients; rank 0 is given more work, so the ranks differ. Prints ``ready RANK PID``."""

import os
import time

import torch
import torch.distributed as dist
from torch import nn

STEPS = int(os.environ.get("STEPS", "300"))


def step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> float:
    opt.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    opt.step()
    return float(loss.item())


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(512 if rank == 0 else 64, 64)
    print("ready", rank, os.getpid(), flush=True)
    for _ in range(STEPS):
        step(model, opt, x)
        time.sleep(0.01)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
