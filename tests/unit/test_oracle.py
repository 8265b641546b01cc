"""The analysis against an independent recomputation (``oracle.py``) on every vendored GPU
trace (issue 29): per-step busy shares and kernel sums by launch, and the hidden share of the
communication, within 0.5 %."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscope.analysis import analyze
from torchscope.analysis.multi.rank_stats import measure_rank
from torchscope.ingest import Trace, load_trace

from . import oracle

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
NO_KERNELS = "hta_cupti_range_no_kernels_a100.json.gz"
GPU_TRACES = sorted(
    p.name
    for p in TRACES.iterdir()
    if p.name.endswith((".json", ".json.gz")) and p.name != NO_KERNELS
)
TOLERANCE = 0.005


def test_every_vendored_trace_with_device_work_is_checked() -> None:
    assert len(GPU_TRACES) == 15  # all 16 but the CUPTI range trace, which has no kernels
    assert oracle.steps(TRACES / NO_KERNELS) == []


@pytest.mark.parametrize("name", GPU_TRACES)
def test_analysis_matches_the_oracle(name: str) -> None:
    trace = load_trace(TRACES / name)
    _step_numbers(name, trace)
    _hidden_communication(name, trace)


def _step_numbers(name: str, trace: Trace) -> None:
    expected = oracle.steps(TRACES / name)
    report = analyze(trace)
    assert len(report.steps) == len(expected)
    for got, want in zip(report.steps, expected):
        assert got.kernel_us == pytest.approx(want["kernel_us"], rel=TOLERANCE, abs=0.01)
        assert got.device_busy_us == pytest.approx(want["busy_us"], rel=TOLERANCE, abs=0.01)
        assert got.span_us == pytest.approx(want["span_us"], rel=TOLERANCE)
        assert got.device_busy_share == pytest.approx(want["busy_share"], abs=TOLERANCE)


def _hidden_communication(name: str, trace: Trace) -> None:
    expected = oracle.hidden_comm(TRACES / name)
    stats = measure_rank(trace, 0, name)
    if expected is None:
        assert sum(stats.comm) == 0
        return
    comm, hidden = expected
    assert sum(stats.comm) == pytest.approx(comm, rel=TOLERANCE)
    assert sum(stats.hidden) / sum(stats.comm) == pytest.approx(hidden / comm, abs=TOLERANCE)
