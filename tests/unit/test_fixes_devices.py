"""The device-dependent fixes' rewrites: ``pinned-transfer`` (CUDA only) and ``channels-last``.

Their measured gains need the device: ``pinned-transfer`` is measured in ``tests/cuda``,
``channels-last`` on this CPU (oneDNN) in ``tests/worker/test_fix.py``.
"""

from __future__ import annotations

import torch

from torchscope.source.fixes import FIXES, fix_by_id, offered

from .test_fixes import HEAD, _rewrite

CONV = "CONV = torch.nn.Conv2d(3, 8, 3)\n\n\n"


def test_both_are_registered_in_the_contract_order() -> None:
    ids = [f.id for f in FIXES]
    assert ids.index("pinned-transfer") < ids.index("inference-mode") < ids.index("channels-last")


def test_pinned_transfer_is_offered_on_cuda_only() -> None:
    body = 'def f(x, device):\n    y = x.to(device)\n    z = x.cuda()\n    return y, z.to("cuda:0")\n'
    assert _rewrite("pinned-transfer", body) is None  # no transfer to speed up on a CPU
    assert all(fix.id != "pinned-transfer" for fix, _ in offered(HEAD + body, "f", "cpu"))
    assert _rewrite("pinned-transfer", body, device="cuda") == (
        "def f(x, device):\n"
        "    y = x.pin_memory().to(device, non_blocking=True)\n"
        "    z = x.pin_memory().cuda(non_blocking=True)\n"
        '    return y, z.pin_memory().to("cuda:0", non_blocking=True)\n'
    )


def test_pinned_transfer_leaves_models_dtypes_and_explicit_flags() -> None:
    for body in (
        "def f(model, device):\n    return model.to(device)\n",
        "def f(x):\n    return x.to(torch.float16)\n",
        "def f(x, device):\n    return x.to(device, non_blocking=False)\n",
        "def f(x):\n    return x.to('cpu')\n",
    ):
        assert _rewrite("pinned-transfer", body, device="cuda") is None, body


def test_channels_last_converts_the_model_and_its_input_at_the_top() -> None:
    body = 'def f(model, x):\n    """Run it."""\n    y = model(x)\n    return y.relu()\n'
    fix = fix_by_id("channels-last")
    assert fix is not None
    rewrite = fix.rewrite(HEAD + CONV + body, "f", "cpu")
    assert rewrite is not None and rewrite.lines == (10 + 3,)
    assert rewrite.source[len(HEAD + CONV) :] == (
        'def f(model, x):\n    """Run it."""\n'
        "    model = model.to(memory_format=torch.channels_last)\n"
        "    x = x.contiguous(memory_format=torch.channels_last)\n"
        "    y = model(x)\n    return y.relu()\n"
    )
    before: dict[str, object] = {}
    after: dict[str, object] = {}
    exec(HEAD + CONV + body, before)
    exec(rewrite.source, after)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    image = torch.randn(2, 3, 16, 16)
    expected = before["f"](net, image)  # type: ignore[operator]
    got = after["f"](net, image)  # type: ignore[operator]
    assert got.is_contiguous(memory_format=torch.channels_last)
    assert torch.allclose(expected, got, atol=1e-5)


def test_channels_last_needs_a_convolution_and_a_model_call() -> None:
    call = "def f(model, x):\n    return model(x)\n"
    assert _rewrite("channels-last", call) is None  # the file has no 2-D convolution
    for body in (
        "def f(model, x):\n    return x.relu()\n",  # no model call
        "def f(fn, x):\n    return fn(x)\n",  # not a model
        "def f(model, x):\n    x = x.to(memory_format=torch.channels_last)\n    return model(x)\n",
        "def f(model, x): return model(x)\n",  # one line: no body to insert into
    ):
        fix = fix_by_id("channels-last")
        assert fix is not None and fix.rewrite(HEAD + CONV + body, "f", "cpu") is None, body
