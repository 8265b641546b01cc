"""The e2e's measured fix: the zero-grad-none code action on `train_step` measures the rewrite
faster with the same outputs; Apply edits the buffer, undo restores it."""

import torch  # noqa: F401  (the directive below calls it)


# torchscope: train_step(torch.nn.Linear(2048, 2048), torch.randn(1, 2048))
def train_step(model, x):
    model.zero_grad(set_to_none=False)
    loss = model(x).square().mean()
    loss.backward()
    return loss
