"""Before and after: the e2e replaces the loop below with one vectorised op in the editor,
then clicks **Compare with last commit** (the workspace is a git repository whose HEAD has the
loop)."""

import torch

W = torch.randn(64, 16)


# torchscope: accumulate(torch.randn(16))
def accumulate(x):
    for i in range(64):
        x = x + W[i]
    return x
