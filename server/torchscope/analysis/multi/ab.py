"""The A/B engine: is B faster than A, from the interleaved rounds of one worker loop
(``worker/ab_rounds.py``)? One decision for ``diff``, ``check``, ``fix --try``,
``--compare-compile`` and adjacent sweep rows; its statistics are :mod:`.interval`'s.

- A round in which one side waited for a CPU (another process held the core) ``WAIT_DROP`` of
  its time more than the other side did is dropped, and the result counts it
  (``protocol.waited_apart``: load both halves shared cancels in their ratio); with fewer than
  :data:`MIN_KEPT` rounds left the machine was too busy to decide: ``inconclusive``.
- The ratio is median(B) / median(A) over the kept rounds, with the paired bootstrap's 95 %
  interval widened by the rounds' measured noise (``interval.widened``); the decision is
  ``interval.outcome``: ``faster`` / ``slower`` when all of it clears the ±5 % band,
  ``no-difference`` when all of it is inside, else ``inconclusive``.
- ``stable`` is ``profile``'s: each side's stability line (the worker's ``unstable_line`` over
  its rounds: too spread, or waiting for a CPU half its time) is empty, and at most half the
  rounds were dropped. The reason names the load (``busy_share``, measured over the rounds as
  ``profile`` measures it) and the rounds the worker added before saying ``inconclusive``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ...protocol import UNSTABLE_ADVICE, Machine, Measurements, spread, waited_apart
from ..formatting import format_share, ratio_phrase
from ..results import ABComparison, SideSpreads
from ..verdict.consistency import self_check_comparison
from .interval import (
    CONFIDENCE,
    NO_DIFFERENCE_BAND,
    RatioInterval,
    outcome,
    ratio_interval,
    widened,
)

MIN_KEPT = 5
"""Fewer kept rounds than this: the machine was too busy to decide."""

BUSY_NAMED = 0.1
"""From this busy share on the reason names the machine's load (``report/stability.BUSY_SHOWN``
for ``profile``)."""


@dataclass(frozen=True)
class ABRounds:
    """Both sides' interleaved rounds: µs per call of each and µs per call it waited for a CPU
    (round ``i`` of A and of B ran back to back), the machine's load over them, each side's
    stability line ("" when stable) and the rounds the worker added past its budget."""

    a_us: list[float]
    b_us: list[float]
    a_wait_us: list[float] = field(default_factory=list)
    b_wait_us: list[float] = field(default_factory=list)
    machine: Optional[Machine] = None
    a_unstable: str = ""
    b_unstable: str = ""
    added: int = 0

    @staticmethod
    def of(a: Measurements, b: Measurements) -> ABRounds:
        """The rounds of a two-sided job, from its two sides' measurements."""
        return ABRounds(
            list(a.call_us),
            list(b.call_us),
            list(a.wait_us),
            list(b.wait_us),
            a.machine or b.machine,
            a.unstable,
            b.unstable,
            max(a.rounds_added, b.rounds_added),
        )

    def pooled(self, more: ABRounds) -> ABRounds:
        """These rounds and ``more`` (a later job's) together; the busier machine reading."""
        machines = [m for m in (self.machine, more.machine) if m is not None]
        return ABRounds(
            self.a_us + more.a_us,
            self.b_us + more.b_us,
            _waits(self.a_wait_us, self.a_us) + _waits(more.a_wait_us, more.a_us),
            _waits(self.b_wait_us, self.b_us) + _waits(more.b_wait_us, more.b_us),
            max(machines, key=lambda m: m.busy_share) if machines else None,
            more.a_unstable,
            more.b_unstable,
            self.added + more.added,
        )


def _waits(wait_us: list[float], call_us: list[float]) -> list[float]:
    """One wait per round (0 where not measured)."""
    return list(wait_us) if len(wait_us) == len(call_us) else [0.0] * len(call_us)


def kept_rounds(rounds: ABRounds) -> tuple[list[float], list[float]]:
    """(A, B) µs of the rounds not ``waited_apart``; every timed round when fewer than
    :data:`MIN_KEPT` are left."""
    a_wait, b_wait = _waits(rounds.a_wait_us, rounds.a_us), _waits(rounds.b_wait_us, rounds.b_us)
    kept = [
        (a, b)
        for a, b, wa, wb in zip(rounds.a_us, rounds.b_us, a_wait, b_wait)
        if a > 0 and b > 0 and not waited_apart(a, b, wa, wb)
    ]
    if len(kept) < MIN_KEPT:
        kept = [(a, b) for a, b in zip(rounds.a_us, rounds.b_us) if a > 0 and b > 0]
    return [a for a, _ in kept], [b for _, b in kept]


def compare_rounds(rounds: ABRounds, band: float = NO_DIFFERENCE_BAND) -> ABComparison:
    """The decision, interval, stability and reason of B against A (module docstring);
    ``ValueError`` when no round timed both sides."""
    timed = sum(1 for a, b in zip(rounds.a_us, rounds.b_us) if a > 0 and b > 0)
    a_us, b_us = kept_rounds(rounds)
    interval = ratio_interval(a_us, b_us)
    ratio, low, high = widened(interval)
    dropped = timed - len(a_us)
    busy_rounds = _busy_rounds(rounds)
    too_busy = dropped == 0 and busy_rounds > 0 and timed - busy_rounds < MIN_KEPT
    decision = "inconclusive" if too_busy else outcome(low, high, band)
    busy = rounds.machine.busy_share if rounds.machine is not None else None
    unstable = rounds.a_unstable or rounds.b_unstable
    stable = not unstable and not too_busy and dropped <= timed / 2
    extra = [
        f"{rounds.added} more rounds measured past the budget" if rounds.added else "",
        f"{dropped} of {timed} rounds dropped (a core was held for one side)" if dropped else "",
        f"machine {format_share(busy)} busy with other work"
        if busy is not None and busy >= BUSY_NAMED
        else "",
        _side_why(unstable),
    ]
    clauses = [_reason(decision, band, too_busy), *(e for e in extra if e)]
    reason = "; ".join(clauses)
    if not stable:  # as profile says it: ``unstable: why; rerun, or raise --timing-budget``
        reason = f"unstable: {reason}; {UNSTABLE_ADVICE}"
    comparison = ABComparison(
        decision=decision,
        ratio=ratio,
        interval=[low, high],
        band=band,
        rounds=timed,
        dropped_rounds=dropped,
        spread=SideSpreads(spread(list(rounds.a_us)), spread(list(rounds.b_us))),
        busy_share=busy,
        stable=stable,
        reason=reason,
        phrase=ratio_phrase(ratio, low, high, decision in ("faster", "slower")),
        added_rounds=rounds.added,
        noise=interval.noise,
    )
    self_check_comparison(comparison)
    return comparison


def _busy_rounds(rounds: ABRounds) -> int:
    a_wait, b_wait = _waits(rounds.a_wait_us, rounds.a_us), _waits(rounds.b_wait_us, rounds.b_us)
    return sum(
        1
        for a, b, wa, wb in zip(rounds.a_us, rounds.b_us, a_wait, b_wait)
        if a > 0 and b > 0 and waited_apart(a, b, wa, wb)
    )


def _side_why(line: str) -> str:
    """A side's ``unstable: why; advice`` line as its why alone."""
    why = line.removeprefix("unstable: ")
    return why.removesuffix(f"; {UNSTABLE_ADVICE}")


def _reason(decision: str, band: float, too_busy: bool) -> str:
    """The decision's own clause (the interval's numbers are the phrase's, not restated)."""
    if too_busy:
        return (
            f"inconclusive: the machine was too busy to decide (fewer than {MIN_KEPT} rounds "
            "in which both sides waited alike for a CPU)"
        )
    interval = f"all of the {format_share(CONFIDENCE)} interval"
    if decision in ("faster", "slower"):
        return f"{decision}: {interval} clears ±{format_share(band)}"
    if decision == "no-difference":
        return f"no difference: {interval} is within ±{format_share(band)}"
    return (
        f"inconclusive: the {format_share(CONFIDENCE)} interval reaches out of "
        f"±{format_share(band)} without clearing it"
    )


def comparison_of(a: Measurements, b: Measurements) -> Optional[ABComparison]:
    """:func:`compare_rounds` of a two-sided job's sides; None when no round timed both."""
    rounds = ABRounds.of(a, b)
    if not any(x > 0 and y > 0 for x, y in zip(rounds.a_us, rounds.b_us)):
        return None
    return compare_rounds(rounds)


def point_comparison(ratio: float, band: float = NO_DIFFERENCE_BAND) -> ABComparison:
    """A ratio known without paired rounds (two medians): no interval beyond itself."""
    low = high = ratio
    decision = outcome(low, high, band) if 0 < ratio < float("inf") else "inconclusive"
    return ABComparison(
        decision=decision,
        ratio=ratio,
        interval=[low, high],
        band=band,
        rounds=0,
        dropped_rounds=0,
        spread=SideSpreads(0.0, 0.0),
        busy_share=None,
        stable=True,
        reason="no paired rounds: the ratio of two medians, with no interval",
        phrase=ratio_phrase(ratio, low, high, decision in ("faster", "slower")),
    )


def interval_comparison(interval: RatioInterval, band: float = NO_DIFFERENCE_BAND) -> ABComparison:
    """The decision of an interval computed elsewhere (no waits, no machine): its widened
    bounds decided as :func:`compare_rounds` decides them."""
    ratio, low, high = widened(interval)
    decision = outcome(low, high, band)
    comparison = ABComparison(
        decision=decision,
        ratio=ratio,
        interval=[low, high],
        band=band,
        rounds=interval.rounds,
        dropped_rounds=0,
        spread=SideSpreads(0.0, 0.0),
        busy_share=None,
        stable=True,
        reason=_reason(decision, band, False),
        phrase=ratio_phrase(ratio, low, high, decision in ("faster", "slower")),
        noise=interval.noise,
    )
    self_check_comparison(comparison)
    return comparison


def as_comparison(source: ABComparison | RatioInterval) -> ABComparison:
    """An engine's comparison as it is; an interval decided (:func:`interval_comparison`)."""
    return interval_comparison(source) if isinstance(source, RatioInterval) else source
