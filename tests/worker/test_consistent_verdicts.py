"""Issue 40 on the team's own nanoGPT-style models (``tests/fixtures/workspace/gpt_samples.py``),
recorded with the real ``torch.profiler`` as a user records them and analysed as ``torchscope
analyze`` does: attention with dropout in training mode gets the advice of a memory-bound op,
not of a GEMM, and a train step (fwd + bwd + AdamW, 2 threads) is judged by this machine's
calibrated peak, or called ``compute-heavy`` without one, never ``compute-bound`` unjudged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from tests.fixtures.workspace.gpt_samples import Block, CausalSelfAttention, GPTConfig, train_step
from torchscope.analysis import analyze_trace
from torchscope.analysis.measure.machine import LocalMachine
from torchscope.analysis.measure.opclass import is_memory_op
from torchscope.analysis.verdict.consistency import contradictions
from torchscope.protocol import CALIBRATION_FILE, machine_id

CONFIG = GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=64, vocab_size=65)


def record(tmp_path: Path, fn: object, calls: int = 3) -> Path:
    """``fn()`` a few times under torch.profiler with shapes, exported as Chrome trace."""
    assert callable(fn)
    fn()  # warm up, as a user's loop would have
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(calls):
            fn()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return path


def test_dropout_gets_the_advice_of_a_memory_bound_op(tmp_path: Path) -> None:
    # The issue: "the verdict pins aten::bernoulli_ and advises 'batch several of them into
    # one larger GEMM'"; the dropout line was a memory-bound chain.
    torch.manual_seed(0)
    attention = CausalSelfAttention(CONFIG).train()
    x = torch.randn(4, 64, 64)
    report = analyze_trace(record(tmp_path, lambda: attention(x)), local=LocalMachine.read())
    assert is_memory_op("aten::bernoulli_") and is_memory_op("aten::dropout")
    v = report.verdict
    assert contradictions(report) == []
    rng = ("bernoulli", "dropout")
    if any(name in v.headline for name in rng):
        assert "GEMM" not in v.headline, v.headline
        assert "torch.compile" in v.headline or "fuse" in v.headline, v.headline
    if v.cause == "compute":  # the op the compute verdict names is math, not RNG
        assert not any(name in v.headline.split(" — ")[0] for name in rng), v.headline


def step_trace(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    block = Block(CONFIG)
    opt = torch.optim.AdamW(block.parameters(), lr=1e-3)
    x = torch.randn(4, 64, 64)
    threads = torch.get_num_threads()
    torch.set_num_threads(min(2, threads))
    try:
        return record(tmp_path, lambda: train_step(block, opt, x), calls=2)
    finally:
        torch.set_num_threads(threads)


def test_a_train_step_recorded_here_is_judged_by_this_machines_peak(tmp_path: Path) -> None:
    trace = step_trace(tmp_path)
    uncalibrated = analyze_trace(trace, local=LocalMachine.read(tmp_path / "none"))
    v = uncalibrated.verdict
    assert v.id != "compute-bound", v.headline
    assert uncalibrated.device.name == LocalMachine.read().cpu  # as profile names it
    assert "torchscope calibrate" in uncalibrated.rules_skipped.get("low-efficiency-gemm", "")
    assert contradictions(uncalibrated) == []

    store = tmp_path / "cache"
    store.mkdir()
    entry = {"value": 100.0, "at": 0.0, "load": 0.0, "cores": 2}
    (store / CALIBRATION_FILE).write_text(
        json.dumps({f"{machine_id()}|torch {torch.__version__}|cpu:2t|float32": entry})
    )
    calibrated = analyze_trace(trace, local=LocalMachine.read(store))
    assert calibrated.peaks is not None and calibrated.peaks.source == "measured"
    assert "low-efficiency-gemm" not in calibrated.rules_skipped
    assert calibrated.verdict.id != "compute-heavy"
    assert contradictions(calibrated) == []


@pytest.mark.parametrize("flag", [False, True])
def test_the_lstm_fixture_runs_at_its_documented_layout(flag: bool) -> None:
    from tests.fixtures.workspace.gpt_samples import BatchFirstTagger, Tagger

    model = BatchFirstTagger() if flag else Tagger()
    x = torch.randn(8, 16, 8) if flag else torch.randn(16, 8, 8)
    assert model(x).shape == (*x.shape[:2], 4)
