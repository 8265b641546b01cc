"""A seeded CPU training loop for the agent's tests: an nn.Module, AdamW, STEPS steps; each
step's loss is printed exactly (``float.hex``) so two runs compare bit for bit. Between steps
it sleeps PAUSE seconds; before each step named in HOLD_AT (``50,150``) it prints ``hold N``
and waits for the file ``HOLD_DIR/release-N`` (the tests attach meanwhile, however slow the
machine). Neither changes what the steps compute."""

import os
import sys
import time

import torch
from torch import nn

STEPS = int(os.environ.get("STEPS", "200"))
PAUSE = float(os.environ.get("PAUSE", "0"))
HOLD_AT = {int(n) for n in os.environ.get("HOLD_AT", "").split(",") if n}
HOLD_DIR = os.environ.get("HOLD_DIR", ".")
RAISE_AT = int(os.environ.get("RAISE_AT", "-1"))  # the step whose call raises (the loop skips it)
_calls = [0]


def hold(i: int) -> None:
    print("hold", i, flush=True)
    while not os.path.exists(os.path.join(HOLD_DIR, f"release-{i}")):
        time.sleep(0.01)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        return self.fc2(h)


def step(model: Net, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> float:
    _calls[0] += 1
    if _calls[0] - 1 == RAISE_AT:
        raise ValueError("a bad batch")
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return float(loss.item())


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(256, 32), torch.randn(256, 1)
    print("ready", os.getpid(), flush=True)
    for i in range(STEPS):
        if i in HOLD_AT:
            hold(i)
        try:
            loss = step(model, opt, x, y)
        except ValueError as exc:
            print("skipped", exc, flush=True)
            continue
        print("loss", loss.hex(), flush=True)
        if PAUSE:
            time.sleep(PAUSE)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
