"""Issue 55 on hand-built CPU traces shaped like torch.profiler's (``record_shapes=True``):
every op gets a class, FLOPs and bytes from the cost model (``measure/opclass``), and the
verdict's advice fits the class — a convolution names convolution causes, never a thin matrix;
dropout's random numbers are ``rng``, never bandwidth; an eval-mode dropout costs nothing; a
bmm at a head size beside a softmax is pointed to sdpa; an optimizer chain gets foreach/fused.
The numbers each test holds the model to are computed in the test from the shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import Measurements, Report, analyze_trace
from torchscope.analysis.measure.opclass import op_class, op_cost
from torchscope.analysis.results import Peaks
from torchscope.analysis.verdict.consistency import contradictions

PEAKS = Peaks({"float32": 100.0}, 10.0, "measured")
"""100 GFLOP/s, 10 GB/s: a ridge point of 10 FLOP/B."""

FLOAT = "float"


def conv_args(
    x: list[int],
    w: list[int],
    stride: int = 1,
    pad: int = 0,
    groups: int = 1,
    transposed: bool = False,
) -> dict[str, Any]:
    n = len(x) - 2
    ints = lambda v: "[" + ", ".join([str(v)] * n) + "]"  # noqa: E731
    return {
        "Input Dims": [x, w, [w[1 if transposed else 0]], [], [], [], [], [], []],
        "Input type": [
            FLOAT,
            FLOAT,
            FLOAT,
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "Scalar",
            "ScalarList",
            "Scalar",
        ],
        "Concrete Inputs": [
            "",
            "",
            "",
            ints(stride),
            ints(pad),
            ints(1),
            str(transposed),
            ints(0),
            str(groups),
        ],
    }


def run(
    kineto: Any,
    tmp_path: Path,
    ops: list[tuple[str, float, dict[str, Any]]],
    call_us: float,
    annotation: str | None = None,
) -> Report:
    """Three steps of ``ops`` (name, µs, args) one after the other, timed at ``call_us``."""
    k = kineto(gpu=False)
    total = sum(d for _, d, _ in ops) + 10
    for step in range(3):
        t = step * (total + 50)
        k.step(step + 1, t, total)
        if annotation:
            k.annotation(annotation, t + 1, total - 2)
        at = t + 5
        for name, dur, args in ops:
            k.op(name, at, dur, **args)
            at += dur
    trace = k.write(tmp_path / "t.json")
    report = analyze_trace(trace, Measurements(0.0, [call_us] * 5, 1.0, peaks=PEAKS))
    assert contradictions(report) == []
    return report


def test_a_convolution_is_counted_as_torch_counts_it() -> None:
    """2 · output positions · batch · weight.numel(), from the stride/padding/groups the trace
    recorded (the MNIST net's second conv: 1.36 GFLOP per call)."""
    x, w = [64, 32, 26, 26], [64, 32, 3, 3]
    work = op_cost("aten::convolution", conv_args(x, w))
    assert work is not None and work.op_class == "convolution"
    assert work.flops == 2 * 64 * 64 * 24 * 24 * 32 * 9
    strided = op_cost("aten::convolution", conv_args([8, 16, 32, 32], [16, 4, 3, 3], 2, 1, 4))
    out = (32 + 2 - 3) // 2 + 1
    assert strided is not None and strided.flops == 2 * 8 * out * out * 16 * 4 * 9
    # transposed: positions are the input's
    up = op_cost("aten::convolution", conv_args([2, 3, 16, 16], [3, 8, 3, 3], 2, 1, 1, True))
    assert up is not None and up.flops == 2 * 2 * 16 * 16 * 3 * 8 * 9


def test_classes_and_no_model_means_none() -> None:
    assert op_class("aten::bernoulli_") == "rng"
    assert op_class("aten::dropout", {"Concrete Inputs": ["", "0.1", "False"]}) == "copy/layout"
    assert op_class("aten::dropout", {"Concrete Inputs": ["", "0.1", "True"]}) == "rng"
    assert op_class("aten::native_layer_norm") == "normalization"
    assert op_class("aten::embedding") == "indexing/embedding"
    assert op_class("aten::_foreach_add_") == "optimizer"
    assert op_class("c10d::allreduce_") == "communication"
    assert op_class("aten::cudnn_convolution") == "convolution"
    assert op_class("aten::matmul") == "gemm"
    assert op_class("aten::_scaled_dot_product_flash_attention_for_cpu") == "attention"
    fp8 = {"Input Dims": [[64, 32], [32, 16], [], []], "Input type": ["c10::Float8_e4m3fn"] * 2}
    scaled = op_cost("aten::_scaled_mm", fp8)
    assert scaled is not None and scaled.flops == 2 * 64 * 32 * 16 and scaled.op_class == "gemm"
    # classified, but no model: None, never a GEMM guess
    assert op_cost("aten::_foreach_add_", {"Input Dims": [[], []]}) is None
    assert op_cost("aten::cudnn_convolution", conv_args([1, 3, 8, 8], [4, 3, 3, 3])) is None
    assert op_cost("aten::matmul", {"Input Dims": [[8, 8], [8, 8]]}) is None


def test_a_slow_convolution_names_convolution_causes(kineto: Any, tmp_path: Path) -> None:
    """The MNIST net's first conv dominates (1 channel in): small channel counts, with
    channels_last — never "thin matrix" or "batch several into one larger GEMM"."""
    x, w = [64, 1, 28, 28], [32, 1, 3, 3]
    flops = 2 * 64 * 32 * 26 * 26 * 9
    dur = flops / 1e3 / (0.1 * PEAKS.matmul_gflops["float32"])  # 10 % of the peak
    report = run(kineto, tmp_path, [("aten::convolution", dur, conv_args(x, w))], dur + 20)
    v = report.verdict
    assert v.cause == "compute"
    assert "small channel counts (C_in=1, C_out=32)" in v.headline, v.headline
    assert "channels_last" in v.headline
    assert "thin matrix" not in v.headline and "GEMM" not in v.headline
    (row,) = [o for o in report.top_ops if o.name == "aten::convolution"]
    assert row.op_class == "convolution" and row.flops == pytest.approx(flops)


def test_grouped_conv_on_a_cpu_says_so(kineto: Any, tmp_path: Path) -> None:
    x, w = [32, 64, 56, 56], [64, 1, 3, 3]
    args = conv_args(x, w, 1, 1, 64)
    flops = 2 * 32 * 56 * 56 * 64 * 9
    dur = flops / 1e3 / (0.05 * 100.0)
    v = run(kineto, tmp_path, [("aten::convolution", dur, args)], dur + 20).verdict
    assert "depthwise convolution on a CPU" in v.headline, v.headline


def test_dropout_random_numbers_are_rng_not_bandwidth(kineto: Any, tmp_path: Path) -> None:
    """Half the call in ``aten::bernoulli_``: ``rng-bound``, told to fuse it (sdpa's
    dropout_p, torch.compile), not memory-bound."""
    shape = [32, 4, 256, 256]
    rng = {"Input Dims": [shape, [], []], "Input type": [FLOAT, "Scalar", ""]}
    mul = {"Input Dims": [shape, shape], "Input type": [FLOAT, FLOAT]}
    report = run(
        kineto, tmp_path, [("aten::bernoulli_", 3200.0, rng), ("aten::mul", 800.0, mul)], 4100.0
    )
    v = report.verdict
    assert (v.id, v.cause) == ("rng-bound", "rng"), v.headline
    assert "aten::bernoulli_" in v.headline and "dropout_p" in v.headline
    assert "memory-bound" not in v.headline and "bandwidth" not in v.headline.split("(")[0]
    (row,) = [o for o in report.top_ops if o.name == "aten::bernoulli_"]
    assert row.op_class == "rng"


def test_eval_dropout_is_not_a_cost(kineto: Any, tmp_path: Path) -> None:
    shape = [64, 1024, 64]
    ew = {"Input Dims": [shape, shape], "Input type": [FLOAT, FLOAT]}
    drop = {
        "Input Dims": [shape, [], []],
        "Input type": [FLOAT, "Scalar", "Scalar"],
        "Concrete Inputs": ["", "0.1", "False"],
    }
    ops = [
        ("aten::add", 900.0, ew),
        ("aten::dropout", 900.0, drop),
        ("aten::mul", 900.0, ew),
        ("aten::sub", 900.0, ew),
    ]
    report = run(kineto, tmp_path, ops, 3700.0)
    (row,) = [o for o in report.top_ops if o.name == "aten::dropout"]
    assert row.op_class == "copy/layout" and row.flops is None and row.bytes is None
    chains = [f for f in report.findings if f.rule == "memory-bound-chain"]
    assert chains and all("aten::dropout" not in f.message for f in chains)


def test_memory_bound_speaks_of_its_own_ops(kineto: Any, tmp_path: Path) -> None:
    """A big GEMM beside a bigger elementwise pass: the headline's intensity is the add's
    (about 1/12 FLOP/B), not the call's with the GEMM in it, and it is below the ridge."""
    a = [1024, 1024]
    mm = {"Input Dims": [a, a], "Input type": [FLOAT, FLOAT]}
    big = [4096, 4096]
    add = {"Input Dims": [big, big], "Input type": [FLOAT, FLOAT]}
    v = run(
        kineto, tmp_path, [("aten::mm", 2000.0, mm), ("aten::add", 60000.0, add)], 62100.0
    ).verdict
    assert v.id == "memory-bound", v.headline
    n = 4096 * 4096
    intensity = n / (3 * n * 4)
    assert f"its arithmetic intensity {intensity:.3g} FLOP/B, below the ridge point of 10" in (
        v.headline
    ), v.headline


def test_a_bmm_at_a_head_size_beside_softmax_is_pointed_to_sdpa(
    kineto: Any, tmp_path: Path
) -> None:
    heads, seq, head = 64, 1024, 32
    qk = {"Input Dims": [[heads, seq, head], [heads, head, seq]], "Input type": [FLOAT, FLOAT]}
    sm = {"Input Dims": [[heads, seq, seq], [], []], "Input type": [FLOAT, "Scalar", "Scalar"]}
    flops = 2 * heads * seq * seq * head
    dur = flops / 1e3 / 10.0  # 10 % of the peak
    ops = [("aten::bmm", dur, qk), ("aten::_softmax", 50.0, sm)]
    v = run(kineto, tmp_path, ops, dur + 80).verdict
    assert "scaled_dot_product_attention" in v.headline, v.headline
    assert "batch several" not in v.headline


def test_an_optimizer_chain_gets_foreach_before_compile(kineto: Any, tmp_path: Path) -> None:
    shape = [2048, 2048]
    ew = {"Input Dims": [shape, shape], "Input type": [FLOAT, FLOAT]}
    ops = [(name, 5000.0, ew) for name in ("aten::mul_", "aten::add_", "aten::addcmul_")]
    report = run(kineto, tmp_path, ops, 15100.0, annotation="Optimizer.step#AdamW.step")
    (chain,) = [f for f in report.findings if f.rule == "memory-bound-chain"]
    assert "foreach=True" in chain.message and "fused=True" in chain.message
    assert chain.message.index("foreach=True") < chain.message.index("torch.compile")
    if report.verdict.id == "memory-bound":
        assert "foreach=True" in report.verdict.headline
