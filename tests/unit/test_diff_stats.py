"""The before/after statistics on their own: the paired-bootstrap interval, the verdict, and
lines matched across an edit (``analysis/diff.py``; the end-to-end tests are in
``tests/worker/test_diff.py``)."""

from __future__ import annotations

import random

from torchscope.analysis.multi.diff import RatioInterval, decide, line_map, ratio_interval


def _rounds(
    n: int, ratio: float, spread: float, seed: int = 1, drift: bool = True
) -> tuple[list[float], list[float]]:
    """Paired rounds: a machine whose speed drifts (both sides alike) plus per-call jitter."""
    rng = random.Random(seed)
    before, after = [], []
    for i in range(n):
        load = 1 + (0.5 if drift and (i // 10) % 2 else 0.0)
        before.append(100 * load * (1 + rng.uniform(-spread, spread)))
        after.append(100 * ratio * load * (1 + rng.uniform(-spread, spread)))
    return before, after


def test_interval_holds_the_ratio_and_is_deterministic() -> None:
    before, after = _rounds(100, 2.0, 0.05)
    first = ratio_interval(before, after)
    assert first == ratio_interval(before, after)
    assert first.low <= first.ratio <= first.high
    assert first.low > 1.8 and first.high < 2.2
    assert first.rounds == 100


def test_more_rounds_narrow_the_interval() -> None:
    few = ratio_interval(*_rounds(12, 1.0, 0.1, drift=False))
    many = ratio_interval(*_rounds(200, 1.0, 0.1, drift=False))
    assert many.high - many.low < few.high - few.low


def test_verdicts() -> None:
    slower = ratio_interval(*_rounds(60, 1.3, 0.05))
    assert decide(slower, "HEAD", 100, 130).id == "slower"
    same = ratio_interval(*_rounds(60, 1.0, 0.05))
    verdict = decide(same, "HEAD", 100, 100)
    assert verdict.id == "no-difference"
    assert verdict.headline.startswith("no difference from HEAD")
    faster = decide(RatioInterval(0.8, 0.78, 0.82, 50, 0.01), "before the edit", 100, 80)
    assert faster.id == "faster"
    assert faster.headline.startswith("25 % faster than before the edit (±2 %")
    # An interval that reaches into the ±5 % band around 1.0 is no difference.
    assert decide(RatioInterval(0.9, 0.85, 0.96, 50, 0.0), "HEAD", 100, 90).id == (
        "no-difference"
    )
    # Measured noise wider than 5 % widens the band.
    assert decide(RatioInterval(0.85, 0.84, 0.86, 50, 0.2), "HEAD", 100, 85).id == (
        "no-difference"
    )
    big = decide(RatioInterval(0.25, 0.24, 0.26, 50, 0.0), "HEAD", 100, 25)
    assert big.headline.startswith("4.0× faster than HEAD")


def test_lines_are_matched_across_an_edit() -> None:
    before = "def fn(x):\n    y = x + 1\n    return y\n"
    after = "def fn(x):\n    # a comment\n    y = x + 1\n    return y\n"
    assert line_map(before, after) == {1: 1, 2: 3, 3: 4}
    edited = "def fn(x):\n    y = x + 2\n    return y\n"
    assert line_map(before, edited) == {1: 1, 2: 2, 3: 3}  # an edited line stays itself
    loop = "def fn(x):\n    for i in range(3):\n        x = x + 1\n    return x\n"
    vectorised = "def fn(x):\n    return x + 3\n"
    assert line_map(loop, vectorised) == {1: 1}
