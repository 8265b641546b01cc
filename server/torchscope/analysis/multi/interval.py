"""Is B faster than A? The one home of that decision, for ``diff``, the measured fixes and the
``torch.compile`` comparison.

Inputs are the per-call times of the two sides in *interleaved* rounds (round ``i`` of each
side ran back to back, so a burst of load hits both). The ratio is median(B) / median(A)
over the rounds; its 95 % interval is a paired bootstrap — rounds are resampled with
replacement as pairs, and the ratio of medians recomputed each time. The measured noise of
the per-round ratios (:func:`measured_noise`: how far the median ratio could be off,
*relative to it*; bursts of load longer than a round are not independent, which the
bootstrap assumes) widens that interval to at least ratio ÷ (1 + noise) … ratio × (1 + noise).
The noise is capped at :data:`MAX_NOISE_BAND`: one long burst on a shared machine can make the
two halves of the rounds disagree by more than 100 %, and a 2× change must still be reported
as one.

A difference is called only when all of the widened interval clears the no-difference band
(:func:`direction`); an interval that reaches into it is *no difference*. The noise is an
uncertainty of the ratio, so it widens the interval, not the band around 1.0: widening both
counted it twice, and a 4.3× speed-up whose interval was 1.4–4.9× came out as "no difference".
Comparing the point ratio with a band widened by the noise (as the compile comparison once
did) called a 1024×1024 ``fn`` 6 % slower compiled when its rounds said 1.02–1.09×.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass

from ...protocol import NO_DIFFERENCE_BAND as NO_DIFFERENCE_BAND

MAX_NOISE_BAND = 0.5
"""The most the measured noise may widen the interval by, relative to the ratio (a ratio beyond
1.5 × 1.05 or below 1 / (1.5 × 1.05) whose bootstrap interval clears the band is always a
verdict)."""

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 1000
"""Resamples of the paired rounds: the interval's ends move by well under 1 % between seeds."""

SEED = 20260529
"""A fixed seed: the same rounds always give the same interval."""


def measured_noise(paired_ratios: list[float]) -> float:
    """How far the median B/A ratio could be off, relative to it (0 with fewer than 4
    rounds). The larger of two estimates:

    - the ~95 % half-width of its confidence interval, 2 × 1.25 σ / √n, with σ estimated from
      the per-round ratios' interquartile range (σ ≈ IQR / 1.35), so a few disturbed rounds do
      not inflate it;
    - how much the first and the second half of the rounds disagree: load on a shared machine
      comes in bursts longer than a round, which the first estimate, assuming independent
      rounds, misses.
    """
    ratios = [r for r in paired_ratios if r > 0 and math.isfinite(r)]
    if len(ratios) < 4:
        return 0.0
    ordered = sorted(ratios)
    q1, _, q3 = statistics.quantiles(ordered, n=4)
    mid = statistics.median(ordered)
    if mid <= 0:
        return 0.0
    sigma = (q3 - q1) / 1.349
    spread = 2 * 1.2533 * sigma / math.sqrt(len(ratios)) / mid
    half = len(ratios) // 2
    halves = abs(statistics.median(ratios[:half]) - statistics.median(ratios[half:])) / mid
    return max(spread, halves)


@dataclass(frozen=True)
class RatioInterval:
    """B / A per call, with its bootstrap interval and the rounds behind it."""

    ratio: float
    low: float
    high: float
    rounds: int
    noise: float


def point_interval(ratio: float) -> RatioInterval:
    """A ratio known without rounds (no interval: it is taken as it is)."""
    return RatioInterval(ratio, ratio, ratio, 0, 0.0)


def ratio_interval(a_us: list[float], b_us: list[float]) -> RatioInterval:
    """The ratio of medians of paired rounds and its ``CONFIDENCE`` bootstrap interval."""
    pairs = [(a, b) for a, b in zip(a_us, b_us) if a > 0 and b > 0]
    if not pairs:
        raise ValueError("no timed rounds on both sides")
    first = [a for a, _ in pairs]
    second = [b for _, b in pairs]
    ratio = statistics.median(second) / statistics.median(first)
    noise = measured_noise([b / a for a, b in pairs])
    n = len(pairs)
    if n < 3:
        return RatioInterval(ratio, ratio, ratio, n, noise)
    rng = random.Random(SEED)
    ratios = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        picks = [rng.randrange(n) for _ in range(n)]
        ratios.append(
            statistics.median([second[i] for i in picks])
            / statistics.median([first[i] for i in picks])
        )
    ratios.sort()
    tail = (1 - CONFIDENCE) / 2
    low = ratios[int(tail * (BOOTSTRAP_RESAMPLES - 1))]
    high = ratios[math.ceil((1 - tail) * (BOOTSTRAP_RESAMPLES - 1))]
    return RatioInterval(ratio, min(low, ratio), max(high, ratio), n, noise)


def widened(interval: RatioInterval) -> tuple[float, float, float]:
    """``(ratio, low, high)``: the bootstrap interval, widened to the ratio ± its measured noise
    (relative, capped at ``MAX_NOISE_BAND``) where that is wider."""
    noise = min(interval.noise, MAX_NOISE_BAND)
    ratio = interval.ratio
    return ratio, min(interval.low, ratio / (1 + noise)), max(interval.high, ratio * (1 + noise))


def direction(low: float, high: float, band: float = NO_DIFFERENCE_BAND) -> int:
    """-1 when all of ``low``–``high`` is below 1 / (1 + band) (B is faster), +1 when all of it
    is above 1 + band (B is slower), 0 when it reaches into the band (no difference)."""
    if high < 1 / (1 + band):
        return -1
    if low > 1 + band:
        return 1
    return 0


def outcome(low: float, high: float, band: float = NO_DIFFERENCE_BAND) -> str:
    """The four decisions of an interval of B / A: ``faster`` (all of it below 1 / (1 + band)),
    ``slower`` (all of it above 1 + band), ``no-difference`` (all of it within the band), else
    ``inconclusive``: it reaches out of the band but not all of it does, so neither a change
    nor its absence is shown (more rounds may tell)."""
    side = direction(low, high, band)
    if side:
        return "faster" if side < 0 else "slower"
    if low >= 1 / (1 + band) and high <= 1 + band:
        return "no-difference"
    return "inconclusive"


def undecided(interval: RatioInterval, band: float = NO_DIFFERENCE_BAND) -> bool:
    """The point ratio lies outside the no-difference band but its widened interval reaches
    into it: the rounds suggest a difference they cannot confirm, and more rounds could
    (a ratio inside the band is *no difference* however wide its interval)."""
    ratio, low, high = widened(interval)
    return direction(low, high, band) == 0 and abs(math.log(ratio)) > math.log(1 + band)
