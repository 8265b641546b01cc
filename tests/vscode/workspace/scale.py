"""No `# torchscope:` directive here: VS Code asks for the call expression, prefilled with a
template from the signature (`scale(x=…)`: `factor` has a default), and remembers the answer."""

import torch


def scale(x, factor=2.0):
    return torch.mul(x, factor)
