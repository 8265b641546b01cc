"""A line's share comes from its time without the profiler when the worker measured it.

Under ``torch.profiler`` each recorded op and marker costs microseconds, so a line of several
small ops looks several times slower than it is, next to a line of one long op
(``examples/lines.py::hot_and_cold``: the 4-element add's line was 0.17-0.32 ms profiled and
0.10-0.24 ms unprofiled). These tests run the real analysis on a hand-built trace of that shape,
and the worker's real line clock on a real marked copy with a stepping clock (no wall time).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import Measurements, analyze_trace
from torchscope.worker import line_timing
from torchscope.worker.line_markers import instrument

MATMUL, ADD = 12, 13
STEPS = 3


def hot_and_cold_trace(kineto: Any, tmp_path: Path) -> Path:
    """Per step: line 12 is one 980 µs op (1000 µs under its marker); line 13 is five small
    ops of 30 µs each (200 µs under its marker, most of it the profiler's own cost)."""
    b = kineto(gpu=False)
    for step in range(STEPS):
        t = step * 2000.0
        b.step(step + 1, t, 1500)
        b.annotation(f"torchscope:L{MATMUL}", t, 1000)
        b.op("aten::mm", t + 10, 980)
        b.annotation(f"torchscope:L{ADD}", t + 1000, 200)
        for k in range(5):
            b.op("aten::add" if k == 0 else f"aten::small{k}", t + 1010 + 38 * k, 30)
    path: Path = b.write(tmp_path / "lines.json")
    return path


def measured(**extra: Any) -> Measurements:
    return Measurements(cold_us=2000.0, call_us=[970.0] * 5, dispatch_floor_us=1.0, **extra)


def test_shares_come_from_the_unprofiled_line_times(kineto: Any, tmp_path: Path) -> None:
    line_us = {MATMUL: [955.0, 950.0, 940.0], ADD: [20.0, 25.0, 15.0]}
    report = analyze_trace(hot_and_cold_trace(kineto, tmp_path), measured(line_us=line_us))
    lines = {s.line: s for s in report.lines}
    assert lines[ADD].share == pytest.approx(20.0 / 970.0)
    assert lines[MATMUL].share == pytest.approx(950.0 / 970.0)
    assert lines[ADD].cpu_us == pytest.approx(20.0)  # 970 µs per call, shared out 950:20
    assert (lines[ADD].cpu_us_min, lines[ADD].cpu_us_max) == pytest.approx((15.0, 25.0))
    assert lines[ADD].profiled_cpu_us == pytest.approx(200.0)  # the profile's own number stays
    assert [s.line for s in report.lines if s.share >= 0.05] == [MATMUL]


def test_without_line_times_the_profiled_shares_stand(kineto: Any, tmp_path: Path) -> None:
    """The same trace without the unprofiled pass (a trace recorded elsewhere): the add's line
    is 200 / 1200 of the profiled time — what the editor showed before this correction."""
    report = analyze_trace(hot_and_cold_trace(kineto, tmp_path), measured())
    lines = {s.line: s for s in report.lines}
    assert lines[ADD].share == pytest.approx(200.0 / 1200.0)
    assert [s.line for s in report.lines if s.share >= 0.05] == [MATMUL, ADD]


def nested(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    if n < 0:
        total = -1
    return total


def test_line_clock_keeps_exclusive_time_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each clock reading advances 1 µs: a statement costs 1 µs between its two readings plus
    what runs inside it, and an enclosing line keeps only its own part."""
    ticks = itertools.count(0, 1000)
    monkeypatch.setattr(line_timing.time, "perf_counter_ns", lambda: next(ticks))
    copy = instrument(nested)
    first = nested.__code__.co_firstlineno
    times = line_timing.time_lines(lambda: copy(3), nested, 2, use_cuda=False)
    header, body, branch, result = (first + k for k in (2, 3, 4, 6))
    assert set(times) == {first + 1, header, body, branch, result}
    assert first + 5 not in times  # `total = -1` never ran
    assert times[body] == [3.0, 3.0]  # three iterations of 1 µs each
    # The header's span runs from reading 0 to reading 7 (the body's six readings inside):
    # 7 µs, less the body's 3 µs, leaves the header the 4 µs between the body's spans.
    assert times[header] == [4.0, 4.0]
    assert times[branch] == [1.0, 1.0] and times[result] == [1.0, 1.0]
