"""Runs whose steps do not agree (issue 29, items 3 and 4).

**Two regimes.** When the steps' busy shares split into two clusters (half the steps at 99 %
busy, half at 20-55 % while the DataLoader is waited on), a median of shares lands between the
clusters and understates the problem 2-3×. The steps then split at the largest gap between
their sorted shares when that gap is at least ``REGIME_GAP`` and each side holds at least
``MIN_REGIME_STEPS`` steps. The *steady* regime is the one with more steps (on a tie, the one
where the run spends more time); the verdict's figures become totals over its steps (its busy
share is ``1 − Σ idle / Σ span``), and the ``step-regimes`` finding names both.

**Borderline.** The verdict decides on one figure per step (the busy share, or the input,
sync or copy share) against a threshold. When the deciding figure is within its noise — the
median absolute deviation of the per-step figures — of the threshold, and some steps decide
otherwise on their own, the verdict names the most common of those other verdicts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..formatting import format_share
from ..index.columns import median
from ..results import Borderline, StepMetrics

REGIME_GAP = 0.25
"""Busy shares 25 points apart split the steps into regimes: wider than the step-to-step
spread of a steady run (≤ 0.19 on every vendored trace: hta_ddp_v100_rank1's last step at 74 %
against 52-55 %) and narrower than the issue's DataLoader case (99 % against 20-55 %)."""

MIN_REGIME_STEPS = 2
"""A regime needs two steps: one odd step is what the median already ignores."""


@dataclass(frozen=True)
class Regimes:
    """The steps split in two by busy share (indices into the step list, in time order)."""

    steady: list[int]
    other: list[int]


def _total_share(steps: Sequence[StepMetrics]) -> float:
    span = sum(s.span_us for s in steps)
    busy = sum(min(s.device_busy_us, s.span_us) for s in steps)
    return busy / span if span > 0 else 0.0


def find_regimes(steps: Sequence[StepMetrics]) -> Regimes | None:
    """Two regimes of busy share, or None when the steps form one cluster."""
    if len(steps) < 2 * MIN_REGIME_STEPS:
        return None
    order = sorted(range(len(steps)), key=lambda i: steps[i].device_busy_share)
    shares = [steps[i].device_busy_share for i in order]
    cut = max(range(1, len(order)), key=lambda j: shares[j] - shares[j - 1])
    if shares[cut] - shares[cut - 1] < REGIME_GAP:
        return None
    low, high = sorted(order[:cut]), sorted(order[cut:])
    if min(len(low), len(high)) < MIN_REGIME_STEPS:
        return None

    def weight(side: list[int]) -> tuple[int, float]:
        return len(side), sum(steps[i].span_us for i in side)

    steady, other = (high, low) if weight(high) >= weight(low) else (low, high)
    return Regimes(steady=steady, other=other)


def regime_share(steps: Sequence[StepMetrics], side: list[int]) -> float:
    """Busy share of one regime: its steps' busy time over their spans, in total."""
    return _total_share([steps[i] for i in side])


def deciding_steps(steps: list[StepMetrics]) -> tuple[float, list[StepMetrics]]:
    """The busy share the verdict decides on, and the steps its other figures come from: the
    median over every step, or with two regimes the total over the steady steps."""
    regimes = find_regimes(steps)
    if regimes is None:
        return median([s.device_busy_share for s in steps]), steps
    steady = [steps[i] for i in regimes.steady]
    return _total_share(steady), steady


def regime_headline(headline: str, verdict_id: str, steps: Sequence[StepMetrics]) -> str:
    """``input-bound: in 15 of 29 steps, GPU idle 61 % …; the other 14 run at 99 % GPU busy
    (step-regimes)``: with two regimes the headline's figures are the steady steps', and it
    says which steps those are (unchanged with one regime)."""
    regimes = find_regimes(steps)
    prefix = verdict_id + ": "
    if regimes is None or not headline.startswith(prefix):
        return headline
    other = len(regimes.other)
    return (
        f"{prefix}in {len(regimes.steady)} of {len(steps)} steps, {headline[len(prefix) :]}; "
        f"the other {other} run at {format_share(regime_share(steps, regimes.other))} GPU busy "
        "(step-regimes)"
    )


def step_figure(verdict_id: str, s: StepMetrics) -> float | None:
    """The figure a verdict decides on, for one step (None: the verdict has none)."""
    if verdict_id in ("compute-bound", "overhead-bound"):
        return s.device_busy_share
    wall = s.wall_us
    if verdict_id == "input-bound":
        return s.input_wait_us / wall if wall > 0 else None
    if verdict_id == "sync-bound":
        return s.sync_us / wall if wall > 0 else None
    if verdict_id == "copy-bound":
        return s.memcpy_us / s.device_busy_us if s.device_busy_us > 0 else None
    return None


def borderline(
    verdict_id: str,
    deciding: float,
    threshold: float,
    steps: list[StepMetrics],
    step_verdict: Callable[[StepMetrics], str],
) -> Borderline | None:
    """The runner-up when ``deciding`` is within the steps' spread of ``threshold`` (None:
    a clear verdict). ``step_verdict`` decides one step on its own."""
    figures = [f for f in (step_figure(verdict_id, s) for s in steps) if f is not None]
    if len(figures) < 2:
        return None
    center = median(figures)
    noise = median([abs(f - center) for f in figures])
    margin = deciding - threshold
    if abs(margin) > noise:
        return None
    others = Counter(v for v in map(step_verdict, steps) if v != verdict_id)
    if not others:
        return None
    runner_up, count = others.most_common(1)[0]
    return Borderline(runner_up=runner_up, margin=margin, steps=count, of=len(steps))


def borderline_headline(headline: str, verdict_id: str, found: Borderline | None) -> str:
    """``compute-bound (borderline: input-bound on 2 of 6 steps): …``."""
    if found is None or not headline.startswith(verdict_id):
        return headline
    note = f" (borderline: {found.runner_up} on {found.steps} of {found.of} steps)"
    return verdict_id + note + headline[len(verdict_id) :]
