"""One function across input sizes: where it crosses from overhead-bound to compute-bound.

The guide's central lesson: a small call is all dispatch (the CPU launching ops), a big one is
all compute, and only measuring several sizes shows where the line is. Each point comes from a
full profile (its typed :class:`~..results.Report`); this module reduces them to the points and
finds the crossover (the table and the chart are ``torchscope.report.sweep``'s and
``sweep_chart``'s). Pure Python, like the rest of ``analysis``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Optional

from ...protocol import Measurements, json_as
from ..index.columns import median
from ..results import ABComparison, Report
from .ab import ABRounds, compare_rounds

COMPUTE_SHARE_CROSSOVER = 0.5
"""The ``compute`` column's midpoint: at least half of each call is compute (on CPU the CPU
verdict's dispatch line, ``verdict.OVERHEAD_BOUND_DISPATCH_SHARE``; on a GPU device time per
call over unprofiled wall time per call). The crossover itself is read off the rows' verdicts
(``crossover``), so the line under the table never contradicts them."""


@dataclass(frozen=True)
class SweepPoint:
    """One size: unprofiled time per call, profiled CPU op time, device or compute time."""

    n: int = field(metadata=json_as(name="N"))  # as the schema names the size
    median_us: Optional[float]
    cpu_us: Optional[float]
    device_us: Optional[float]
    compute_share: Optional[float]
    """Share of a call spent computing rather than dispatching (0-1)."""
    compute_us: Optional[float]
    """``median_us × compute_share``: the part of the call that is the work itself."""
    verdict: str
    headline: str = ""
    trace_path: Optional[str] = None
    error: Optional[str] = None
    cause: str = ""
    """The cause the row's verdict names (``Verdict.cause``: ``dispatch``, ``threads`` …)."""
    stable: bool = True
    """``profile``'s stability checks on this size (``verdict.stable``): an unstable row is
    marked in the table and the chart and left out of the crossover."""
    spread: Optional[float] = None
    """The size's timing samples' interquartile range over median (``timing.spread``)."""
    busy_share: Optional[float] = None
    """Other work's share of the machine's cores during this size's job (None: not measured)."""
    unstable_reason: str = ""
    """When not ``stable``: ``unstable: …; rerun, or raise --timing-budget``."""

    @property
    def ok(self) -> bool:
        return self.error is None and self.compute_share is not None

    @property
    def counted(self) -> bool:
        """Measured and stable: a row the crossover is read from."""
        return self.ok and self.stable


def _finite(value: Optional[float]) -> Optional[float]:
    """The number as the JSON carries it: NaN and inf are no number."""
    return value if value is not None and math.isfinite(value) else None


WORK_CAUSES = ("compute", "bandwidth", "rng")
"""The CPU causes that are the work itself (the ops' bodies); the rest are overheads."""


def compute_share(report: Report) -> Optional[float]:
    """Compute share of one profile (see :data:`COMPUTE_SHARE_CROSSOVER`): on a CPU the share
    of the call its work causes take (``WORK_CAUSES``), so a row whose overhead is the threads
    or page faults never reads "compute 100 %" beside overhead-bound (issue 55)."""
    call_us = _finite(report.timing.median_us) if report.timing else None
    if report.device.kind == "cuda":
        device_us = _finite(report.verdict.device_us)
        if call_us is not None and call_us > 0 and device_us is not None:
            return max(0.0, min(1.0, device_us / call_us))
        return None
    causes = report.verdict.causes
    if causes:
        return max(0.0, min(1.0, sum(c.share for c in causes if c.cause in WORK_CAUSES)))
    overhead = _finite(report.verdict.overhead_share)
    if overhead is not None:
        return max(0.0, min(1.0, 1.0 - overhead))
    return None


def point_from_report(n: int, report: Report, trace_path: Optional[str] = None) -> SweepPoint:
    """One size's point from its profile's report."""
    call_us = _finite(report.timing.median_us) if report.timing else None
    share = compute_share(report)
    gpu = report.device.kind == "cuda"
    return SweepPoint(
        n=n,
        median_us=call_us,
        cpu_us=median([s.cpu_op_us for s in report.steps]) if report.steps else None,
        device_us=_finite(report.verdict.device_us) if gpu else 0.0,
        compute_share=share,
        compute_us=call_us * share if share is not None and call_us is not None else None,
        verdict=report.verdict.id,
        headline=report.verdict.headline,
        trace_path=trace_path,
        cause=report.verdict.cause,
        stable=report.verdict.stable,
        spread=report.timing.spread if report.timing else None,
        busy_share=report.machine.busy_share if report.machine else None,
        unstable_reason=report.verdict.unstable_reason,
    )


@dataclass(frozen=True)
class SweepStep:
    """From one measured size to the next: the A/B engine's comparison of their timing
    samples (B the larger size). The two sizes ran in separate jobs, not interleaved rounds,
    so a burst of load between them is not cancelled: the reason says so."""

    n_from: int = field(metadata=json_as(name="from"))
    n_to: int = field(metadata=json_as(name="to"))
    comparison: ABComparison


SEPARATE_JOBS = "the two sizes ran in separate jobs, not in interleaved rounds"


def sweep_step(n_from: int, a: Measurements, n_to: int, b: Measurements) -> Optional[SweepStep]:
    """The comparison of two adjacent sizes' samples (the first ``min`` of each, in order);
    None without samples on both."""
    k = min(len(a.call_us), len(b.call_us))
    if k == 0:
        return None
    rounds = ABRounds(
        list(a.call_us[:k]),
        list(b.call_us[:k]),
        list(a.wait_us[:k]),
        list(b.wait_us[:k]),
        max((m for m in (a.machine, b.machine) if m), key=lambda m: m.busy_share, default=None),
        a.unstable,
        b.unstable,
    )
    c = compare_rounds(rounds)
    return SweepStep(n_from, n_to, replace(c, reason=f"{c.reason}; {SEPARATE_JOBS}"))


@dataclass
class Sweep:
    """One function across sizes: the points, the crossover and where the chart was written."""

    name: str
    """The size's placeholder name (``N``)."""
    call: str
    """The call template holding ``{name}``."""
    points: list[SweepPoint] = field(default_factory=list)
    crossover: Optional[int] = None
    chart_path: Optional[str] = None
    captured_batch: Optional[int] = field(default=None, metadata=json_as(omit_none=True))
    """A sweep over a capture's batch dimension: the capture's own batch size."""
    batch_dim: Optional[int] = field(default=None, metadata=json_as(omit_none=True))
    """That sweep's batch dimension."""
    steps: list[SweepStep] = field(default_factory=list)
    """Each pair of adjacent measured sizes, compared by the A/B engine."""


def failed_point(n: int, error: str) -> SweepPoint:
    return SweepPoint(n, None, None, None, None, None, "failed", error=error)


OVERHEAD_VERDICTS = ("overhead-bound",)
"""The row verdicts on the overhead side of the crossover: the call's fixed costs dominate.
Every other verdict (compute-bound, low-efficiency, memory-bound, compute-heavy …) says the
work itself does."""


def past_overhead(point: SweepPoint) -> bool:
    """The row's own verdict says the work dominates (not ``OVERHEAD_VERDICTS``)."""
    return point.verdict not in OVERHEAD_VERDICTS


def crossover(points: list[SweepPoint]) -> Optional[int]:
    """The smallest size from which every larger measured size's row verdict is past the
    overhead (``past_overhead``), provided some smaller size is overhead-bound; None when all
    sizes sit on one side. Computed from the verdicts the rows print (issue 40: rows read
    overhead-bound / overhead-bound / low-efficiency above "compute-bound at every size"), of
    the stable rows only (issue 54: an unstable row's verdict may be the load's)."""
    measured = sorted((p for p in points if p.counted), key=lambda p: p.n)
    found: Optional[int] = None
    for k in range(len(measured) - 1, -1, -1):
        if not past_overhead(measured[k]):
            break
        found = measured[k].n
    if found is None or found == measured[0].n:
        return None
    return found
