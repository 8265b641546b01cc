"""Device busy time and gaps (the union of intervals) against a brute-force reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchscope.analysis import analyze_trace
from torchscope.analysis.index.intervals import Timeline

EPOCH = 1_669_783_687_000_000.0  # absolute µs, as older Kineto traces write them

intervals = st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(0, 500)).map(
        lambda t: (float(t[0]), float(t[0] + t[1]))
    ),
    max_size=60,
)


def reference_busy(iv: list[tuple[float, float]], a: float, b: float) -> float:
    """Count covered unit cells one by one (integers only, so exact)."""
    covered = set()
    for s, e in iv:
        covered.update(range(int(max(s, a)), int(min(e, b))))
    return float(len(covered))


@settings(max_examples=300, deadline=None)
@given(iv=intervals, a=st.integers(-100, 10_600), width=st.integers(0, 11_000))
def test_busy_matches_reference(iv: list[tuple[float, float]], a: int, width: int) -> None:
    b = a + width
    t = Timeline(iv)
    assert t.busy(a, b) == reference_busy(iv, a, b)
    gaps = t.gaps(a, b)
    assert sum(g1 - g0 for g0, g1 in gaps) == pytest.approx((b - a) - t.busy(a, b))
    assert all(a <= g0 < g1 <= b for g0, g1 in gaps)


@settings(max_examples=100, deadline=None)
@given(iv=intervals)
def test_busy_is_exact_on_epoch_timestamps(iv: list[tuple[float, float]]) -> None:
    shifted = Timeline([(s + EPOCH, e + EPOCH) for s, e in iv])
    assert shifted.busy(EPOCH - 1, EPOCH + 20_000) == reference_busy(iv, -1, 20_000)


def test_short_kernels_keep_their_duration_on_epoch_timestamps(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, EPOCH, 1000)
    for i in range(50):
        b.launch(EPOCH + 10 + i * 15, 5, "void tiny()", EPOCH + 20 + i * 15, 1.76)
    report = analyze_trace(b.write(tmp_path / "epoch.json"))
    step = report.steps[0]
    assert step.kernel_us == pytest.approx(50 * 1.76, abs=1e-6)
    assert step.device_busy_us == pytest.approx(50 * 1.76, abs=1e-6)


@settings(max_examples=300, deadline=None)
@given(iv=intervals, nested=st.booleans())
def test_all_constructors_build_the_same_union(iv: list[tuple[float, float]], nested: bool) -> None:
    if nested:  # an interval inside an earlier one: ends decrease, the general merge runs
        iv = [*iv, (0.0, 20_000.0), (5.0, 6.0)]
    ordered = sorted(iv, key=lambda p: p[0])
    reference = Timeline(iv)
    for built in (
        Timeline.from_sorted(ordered),
        Timeline.from_columns([s for s, _ in ordered], [e for _, e in ordered]),
    ):
        assert (built.starts, built.ends) == (reference.starts, reference.ends)
