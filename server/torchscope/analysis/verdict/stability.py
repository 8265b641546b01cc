"""The unprofiled timing's numbers and whether the verdict drawn from them can be trusted.

``timing_of``: median, range, ``samples`` and ``spread`` (IQR / median, ``protocol.spread``)
of the worker's timing pass. ``judged``: the verdict with ``stable`` False and its one line
when the worker found its passes disagreeing twice or its samples too spread
(``worker/stability.py``), or when the profiled steps of the trace ran faster than the
unprofiled calls beyond the noise (``protocol.passes_disagree``); and the profiler overhead,
which is never negative (None then: one of the passes was disturbed).
"""

from __future__ import annotations

from dataclasses import replace

from torchscope.protocol import UNSTABLE_ADVICE, passes_disagree, spread

from ..index.columns import median
from ..results import Measurements, StepMetrics, Timing, Verdict


def timing_of(measurements: Measurements | None) -> Timing | None:
    """The unprofiled timing (None without measurements)."""
    if measurements is None or not measurements.call_us:
        return None
    calls = measurements.call_us
    return Timing(
        cold_us=float(measurements.cold_us),
        min_us=float(min(calls)),
        median_us=median(calls),
        max_us=float(max(calls)),
        calls=measurements.calls or len(calls),
        wait_us=median(measurements.wait_us) if measurements.wait_us else None,
        samples=len(calls),
        spread=spread(list(calls)),
    )


def judged(
    verdict: Verdict,
    measurements: Measurements | None,
    timing: Timing | None,
    steps: list[StepMetrics],
) -> tuple[Verdict, float | None]:
    """The verdict with its stability, and the profiler overhead per step (None: unknown)."""
    if measurements is None or timing is None or not steps:
        return verdict, None
    # A step's time is its span where the device ran past the CPU (CUDA launches return at
    # once; the unprofiled calls synchronise): the CPU wall alone reads 53 µs for 2.7 ms.
    walls = [max(s.wall_us, s.span_us) for s in steps]
    overhead: float | None = median(walls) - timing.median_us
    if overhead is not None and overhead < 0:
        overhead = None  # never shown negative: the passes disagree, or nearly
    reason = measurements.unstable
    if not reason and passes_disagree(list(measurements.call_us), walls):
        reason = (
            "unstable: the profiled steps ran faster than the unprofiled calls; " + UNSTABLE_ADVICE
        )
    if not reason:
        return verdict, overhead
    return replace(verdict, stable=False, unstable_reason=reason), overhead
