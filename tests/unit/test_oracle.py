"""The analysis against an independent recomputation (``oracle.py``) on every vendored GPU
trace (issue 29): per-step busy shares, kernel sums and launch delays by launch, the
top-kernels table's per-step sums by launch, the hidden share of the communication and
comm-heavy's all-steps shares, within 0.5 %."""

from __future__ import annotations

from pathlib import Path
from statistics import median

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
    _top_kernels(name, trace)
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
        delays = want["launch_delays"]
        if delays:
            assert got.launch_delay_us == pytest.approx(median(delays), rel=TOLERANCE)
        else:
            assert got.launch_delay_us is None


def _top_kernels(name: str, trace: Trace) -> None:
    rows = oracle.kernel_rows(TRACES / name)
    table = analyze(trace).top_kernels
    assert table, name
    for got in table:
        per_step, calls = rows[got.name]
        assert got.calls == calls
        assert got.median_us == pytest.approx(median(per_step), rel=TOLERANCE, abs=0.01)
        assert got.min_us == pytest.approx(min(per_step), rel=TOLERANCE, abs=0.01)
        assert got.max_us == pytest.approx(max(per_step), rel=TOLERANCE, abs=0.01)
    # the table holds the kernels with the largest median per step
    cutoff = min(got.median_us for got in table)
    assert all(
        median(per_step) <= cutoff * (1 + TOLERANCE) + 0.01
        for kernel, (per_step, _) in rows.items()
        if kernel not in {got.name for got in table}
    )


def _hidden_communication(name: str, trace: Trace) -> None:
    expected = oracle.hidden_comm(TRACES / name)
    stats = measure_rank(trace, 0, name)
    if expected is None:
        assert sum(stats.comm) == 0
        return
    comm, hidden = expected
    assert sum(stats.comm) == pytest.approx(comm, rel=TOLERANCE)
    assert sum(stats.hidden) / sum(stats.comm) == pytest.approx(hidden / comm, abs=TOLERANCE)
    # comm-heavy: all steps' communication and its exposed part over all steps' time
    heavy = [f for f in stats.report.findings if f.rule == "comm-heavy"]
    if heavy:
        wall = oracle.steps_wall(TRACES / name)
        assert heavy[0].details["comm_share"] == pytest.approx(comm / wall, abs=TOLERANCE)
        exposed = (comm - hidden) / wall
        assert heavy[0].details["exposed_share"] == pytest.approx(exposed, abs=TOLERANCE)
