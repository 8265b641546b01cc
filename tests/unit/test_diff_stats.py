"""The before/after statistics on their own: the paired-bootstrap interval, the verdict, and
lines matched across an edit (``analysis/diff.py``; the end-to-end tests are in
``tests/worker/test_diff.py``)."""

from __future__ import annotations

import random

from torchscope.analysis.formatting import format_change_interval
from torchscope.analysis.multi.diff import decide, line_map
from torchscope.analysis.multi.interval import RatioInterval, ratio_interval, undecided


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
    # issue 54: the one phrase, in one direction with one pair of parentheses
    assert faster.headline.startswith(
        "faster than before the edit: 1.25× faster (1.22×–1.28× faster); 100 µs → 80 µs"
    )
    # An interval that reaches out of the ±5 % band without clearing it is inconclusive (issue
    # 54's four outcomes; it read "no difference" before).
    assert decide(RatioInterval(0.9, 0.85, 0.96, 50, 0.0), "HEAD", 100, 90).id == (
        "inconclusive"
    )
    # Measured noise wider than the bootstrap interval widens the interval into the band.
    noisy = decide(RatioInterval(0.85, 0.84, 0.86, 50, 0.2), "HEAD", 100, 85)
    assert noisy.id == "inconclusive"
    assert "slower" not in noisy.headline and "faster than" not in noisy.headline
    assert (round(noisy.ci_low, 3), round(noisy.ci_high, 3)) == (0.708, 1.02)
    big = decide(RatioInterval(0.25, 0.24, 0.26, 50, 0.0), "HEAD", 100, 25)
    assert big.headline.startswith("faster than HEAD: 4.0× faster (3.8×–4.2× faster)")


def test_undecided_is_a_suggested_difference_the_interval_cannot_confirm() -> None:
    """What a fix's trial measures again (``host/fix_run.py``): a point ratio past the band
    whose widened interval reaches into it, not a confident verdict either way, nor a ratio
    inside the band however wide its interval."""
    assert undecided(RatioInterval(1 / 1.09, 1 / 1.30, 1 / 0.92, 40, 0.0))  # the CI run's SDPA
    assert undecided(RatioInterval(0.85, 0.84, 0.86, 50, 0.2))  # noise widens it into the band
    assert not undecided(RatioInterval(0.8, 0.78, 0.82, 50, 0.01))  # confirmed: faster
    assert not undecided(RatioInterval(1.0, 0.7, 1.4, 50, 0.3))  # no difference suggested
    assert not undecided(RatioInterval(1.03, 0.9, 1.2, 50, 0.1))  # inside the band
    # More rounds of the same 12 % change decide it.
    few = ratio_interval(*_rounds(8, 1.12, 0.15, drift=False))
    many = ratio_interval(*_rounds(300, 1.12, 0.15, drift=False))
    assert undecided(few) and not undecided(many)


def test_lines_are_matched_across_an_edit() -> None:
    before = "def fn(x):\n    y = x + 1\n    return y\n"
    after = "def fn(x):\n    # a comment\n    y = x + 1\n    return y\n"
    assert line_map(before, after) == {1: 1, 2: 3, 3: 4}
    edited = "def fn(x):\n    y = x + 2\n    return y\n"
    assert line_map(before, edited) == {1: 1, 2: 2, 3: 3}  # an edited line stays itself
    loop = "def fn(x):\n    for i in range(3):\n        x = x + 1\n    return x\n"
    vectorised = "def fn(x):\n    return x + 3\n"
    assert line_map(loop, vectorised) == {1: 1}


def test_a_large_change_whose_interval_clears_the_band_is_a_verdict_however_noisy() -> None:
    """The trial that once read "no difference": a rewrite 3.8× faster on a quiet machine and
    1.4× under a burst of load over the last 28 of 60 rounds. Its bootstrap interval (1.45×
    at the slow end) clears the ±5 % band by far; its per-round ratios' halves disagree by more
    than 100 %, and that noise (capped at 50 %) must widen the interval around the ratio, not
    the band around 1.0 (which left 1.45× inside a ±50 % band)."""
    before = [100.0 + i % 7 for i in range(60)]
    after = [(23.0 if i < 32 else 70.0) + i % 5 for i in range(60)]
    interval = ratio_interval(before, after)
    assert interval.noise > 0.5 and 1 / 1.5 < interval.high < 1 / 1.05
    faster = decide(interval, "the original", 100, 23)
    assert faster.id == "faster", faster.headline
    assert faster.headline.startswith("faster than the original: 3.8× faster")
    assert faster.ci_low == interval.ratio / 1.5 and faster.ci_high == interval.high
    assert faster.band == 0.05
    # The same rounds the other way round: slower, by the same rule.
    slower = decide(ratio_interval(after, before), "HEAD", 23, 100)
    assert slower.id == "slower" and slower.ci_low > 1.05
    # A small change inside the same noise is not decided (issue 54: inconclusive).
    small = decide(RatioInterval(0.9, 0.88, 0.92, 60, 0.6), "HEAD", 100, 90)
    assert small.id == "inconclusive"


def test_the_interval_is_in_the_ratio_s_unit_at_both_ends() -> None:
    """A 1.6× change whose interval starts just under 1.5× read ``interval 49 %–1.7×``: each
    end in its own unit. Both ends take the ratio's."""
    slower = decide(RatioInterval(1.58, 1.494, 1.666, 50, 0.0), "HEAD", 100, 158)
    assert slower.headline.startswith("slower than HEAD: 1.6× slower (1.5×–1.7× slower)")
    faster = decide(RatioInterval(1 / 1.58, 1 / 1.666, 1 / 1.494, 50, 0.0), "HEAD", 158, 100)
    assert "1.6× faster (1.5×–1.7× faster)" in faster.headline, faster.headline
    assert format_change_interval(1.12, 1.08, 1.16) == "8 %–16 %"
    assert format_change_interval(1 / 1.12, 1 / 1.08, 1 / 1.6) == "8 %–60 %"
