"""The cost model (``analysis/measure/opclass``) held to torch's own count (issue 55): each call
runs once under ``torch.utils.flop_counter.FlopCounterMode`` and once under ``torch.profiler``
with ``record_shapes=True``; the model, reading only the trace's recorded shapes, dtypes and
``Concrete Inputs``, agrees within 1 % on every op FlopCounterMode counts, forward and backward.

Two oracles are torch's count taken another way, where FlopCounterMode has no formula for the
op the CPU runs: the CPU flash-attention kernel is counted by FlopCounterMode over the same
call on the math backend (forward) and by ``flop_counter.sdpa_backward_flop_count`` on the
call's shapes (backward); a grouped convolution's backward is counted as its groups run as
separate convolutions (FlopCounterMode's formula multiplies the full channel counts for the
weight gradient, ``groups``× the work the kernel does).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from torchscope.analysis import load_trace
from torchscope.analysis.measure.opclass import op_cost

Call = Callable[[], None]


def torch_count(fn: Call) -> dict[str, float]:
    """FlopCounterMode's FLOPs per ATen op (``aten::convolution`` …) for one ``fn()``."""
    with FlopCounterMode(display=False) as counter:
        fn()
    counts = counter.get_flop_counts().get("Global", {})
    return {str(op).replace("aten.", "aten::"): float(n) for op, n in counts.items()}


def model_count(fn: Call, tmp_path: Path) -> dict[str, float]:
    """The model's FLOPs per op name over the ops the profiler recorded for one ``fn()``."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    out: dict[str, float] = defaultdict(float)
    for op in load_trace(path).ops:
        work = op_cost(op.name, op.args)
        if work is not None and work.kind == "gemm":
            out[op.name] += work.flops
    return dict(out)


def assert_agrees(model: dict[str, float], oracle: dict[str, float]) -> None:
    assert oracle, "the oracle counted nothing"
    for name, flops in oracle.items():
        assert model.get(name, 0.0) == pytest.approx(flops, rel=0.01), (name, model, oracle)


def conv_case(conv: torch.nn.Module, x: torch.Tensor) -> Call:
    x = x.requires_grad_()

    def fn() -> None:
        conv(x).sum().backward()

    return fn


torch.manual_seed(0)
CONVS: dict[str, tuple[torch.nn.Module, list[int]]] = {
    "conv1d strided padded": (torch.nn.Conv1d(4, 8, 5, stride=2, padding=2), [2, 4, 33]),
    "conv1d dilated": (torch.nn.Conv1d(4, 6, 3, dilation=2), [2, 4, 20]),
    "conv2d": (torch.nn.Conv2d(3, 16, 3, padding=1), [2, 3, 16, 16]),
    "conv2d strided": (torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), [2, 8, 15, 15]),
    "conv3d": (torch.nn.Conv3d(2, 4, 3, padding=1), [1, 2, 6, 8, 8]),
    "conv_transpose2d": (
        torch.nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1),
        [2, 8, 7, 7],
    ),
    "conv_transpose1d": (torch.nn.ConvTranspose1d(4, 6, 4, stride=3), [2, 4, 9]),
}


@pytest.mark.parametrize("case", sorted(CONVS))
def test_convolutions_forward_and_backward(case: str, tmp_path: Path) -> None:
    conv, shape = CONVS[case]
    fn = conv_case(conv, torch.randn(*shape))
    oracle = torch_count(fn)
    assert set(oracle) == {"aten::convolution", "aten::convolution_backward"}
    assert_agrees(model_count(fn, tmp_path), oracle)


GROUPED: dict[str, tuple[int, int, int, list[int], dict[str, int]]] = {
    "grouped": (8, 12, 4, [2, 8, 10, 10], {"padding": 1}),
    "depthwise": (6, 6, 6, [2, 6, 12, 12], {"stride": 2, "padding": 1}),
    "grouped transposed": (4, 6, 2, [1, 4, 6, 6], {"stride": 2}),
}


@pytest.mark.parametrize("case", sorted(GROUPED))
def test_grouped_convolutions(case: str, tmp_path: Path) -> None:
    """Forward: FlopCounterMode on the grouped call. Backward: FlopCounterMode on the groups
    run as separate dense convolutions of their channel slices."""
    c_in, c_out, groups, shape, kw = GROUPED[case]
    transposed = "transposed" in case
    cls = torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d
    conv = cls(c_in, c_out, 3, groups=groups, **kw)
    x = torch.randn(*shape)
    fn = conv_case(conv, x)
    model = model_count(fn, tmp_path)
    forward = torch_count(lambda: conv(x))
    assert_agrees(model, {"aten::convolution": forward["aten::convolution"]})
    slices = [
        cls(c_in // groups, c_out // groups, 3, **kw) for _ in range(groups)
    ]  # one dense conv per group, same shapes as the group's slice
    xs = [x[:, g * (c_in // groups) : (g + 1) * (c_in // groups)].detach() for g in range(groups)]

    def separate() -> None:
        for conv_g, x_g in zip(slices, xs):
            conv_g(x_g.requires_grad_()).sum().backward()

    dense = torch_count(separate)
    assert_agrees(model, {"aten::convolution_backward": dense["aten::convolution_backward"]})


def gemm_cases() -> dict[str, Call]:
    torch.manual_seed(0)
    lin = torch.nn.Linear(48, 40)
    x2, x3 = torch.randn(16, 48), torch.randn(4, 10, 48)
    a, b = torch.randn(8, 24, requires_grad=True), torch.randn(24, 12, requires_grad=True)
    ba, bb = torch.randn(3, 8, 16, requires_grad=True), torch.randn(3, 16, 5, requires_grad=True)
    bias, bbias = torch.randn(8, 12), torch.randn(3, 8, 5)
    return {
        "linear": lambda: lin(x2.requires_grad_()).sum().backward(),
        "linear 3-D": lambda: lin(x3.requires_grad_()).sum().backward(),
        "mm": lambda: torch.mm(a, b).sum().backward(),
        "addmm": lambda: torch.addmm(bias, a, b).sum().backward(),
        "bmm": lambda: torch.bmm(ba, bb).sum().backward(),
        "baddbmm": lambda: torch.baddbmm(bbias, ba, bb).sum().backward(),
    }


@pytest.mark.parametrize("case", sorted(gemm_cases()))
def test_gemms_forward_and_backward(case: str, tmp_path: Path) -> None:
    fn = gemm_cases()[case]
    assert_agrees(model_count(fn, tmp_path), torch_count(fn))


@pytest.mark.parametrize("heads_kv", [4, 2])
def test_sdpa_forward_and_backward(heads_kv: int, tmp_path: Path) -> None:
    """The CPU's flash kernel (and grouped-query attention with fewer key/value heads)."""
    q = torch.randn(2, 4, 24, 16, requires_grad=True)
    k = torch.randn(2, heads_kv, 20, 16, requires_grad=True)
    v = torch.randn(2, heads_kv, 20, 16, requires_grad=True)
    gqa = heads_kv != 4

    def fn() -> None:
        F.scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=gqa).sum().backward()

    def forward_math() -> None:
        with sdpa_kernel(SDPBackend.MATH):
            F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)

    model = model_count(fn, tmp_path)
    kernel = "aten::_scaled_dot_product_flash_attention_for_cpu"
    math = sum(torch_count(forward_math).values())
    assert math == sdpa_flop_count(q.shape, k.shape, v.shape)
    assert_agrees(model, {kernel: math})
    backward = sdpa_backward_flop_count(q.shape, q.shape, k.shape, v.shape)
    assert_agrees(model, {f"{kernel}_backward": float(backward)})


def test_an_lstm_layer_is_its_gemms(tmp_path: Path) -> None:
    """FlopCounterMode counts nothing for the CPU's fused LSTM layer (``mkldnn_rnn_layer``):
    the oracle is the same layers unrolled into ``LSTMCell`` calls, whose GEMMs it counts."""
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch runs its LSTM without oneDNN's fused layer")
    steps, batch, width, hidden = 10, 4, 32, 64
    lstm = torch.nn.LSTM(width, hidden, num_layers=2, batch_first=True)
    x = torch.randn(batch, steps, width)

    def unrolled() -> None:
        inputs = list(x.unbind(1))
        for layer in range(2):
            cell = torch.nn.LSTMCell(width if layer == 0 else hidden, hidden)
            h = c = torch.zeros(batch, hidden)
            outputs = []
            for step in inputs:
                h, c = cell(step, (h, c))
                outputs.append(h)
            inputs = outputs

    with torch.no_grad():
        oracle = sum(torch_count(unrolled).values())
        model = model_count(lambda: lstm(x), tmp_path)
    assert set(model) == {"aten::mkldnn_rnn_layer"}, model
    assert_agrees(model, {"aten::mkldnn_rnn_layer": oracle})
