"""A data-parallel step with a straggler: rank 1 computes more before the all-reduce.

    torchscope profile examples/ranks.py::step              # the directive: 2 ranks, gloo
    torchscope profile examples/ranks.py::step --nproc 4

The call expression runs after the process group is initialised, so it can ask for the rank.
"""

import torch
import torch.distributed as dist


# torchscope[nproc=2]: step(torch.ones(2_000_000), extra=200 if dist.get_rank() == 1 else 0)
def step(grad, extra=0):
    w = torch.randn(128, 128)
    for _ in range(5 + extra):
        w = torch.tanh(w @ w)
    dist.all_reduce(grad)  # every rank waits here for the slowest one
    return w


# torchscope[nproc=2]: broken_on_rank_0(torch.ones(1000))
def broken_on_rank_0(x):
    if dist.get_rank() == 0:
        raise ValueError("rank 0 has no data")
    dist.all_reduce(x)
