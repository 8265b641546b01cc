"""torchscope: why is this PyTorch function slow? torch.profiler findings where the code is written.

Kept empty on purpose: the worker imports this package inside the user's interpreter and must
not pull in the daemon's dependencies (pygls), and the daemon must not pull in torch.
"""

__version__ = "0.1.0"
