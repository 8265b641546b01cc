"""``comm-heavy``: collective communication takes more than 10 % of the step.

HolisticTraceAnalysis' temporal and communication-computation overlap breakdowns: NCCL kernels
above 10 % of a step are worth a look, and what hurts is the part not overlapped with compute
(exposed communication). Remedies: DDP bucket sizes (``bucket_cap_mb``), gradient
accumulation with ``no_sync()``, overlapping optimizer work, or finding the straggler rank.

Over one trace, communication and its exposed part are computed per step and reported as
all-steps totals (shares of all steps' time; µs per step as the total over the steps), with
the per-step range of the exposed share: never medians of different steps.

The same id is judged twice, with one threshold (``verdict/findings.CommHeavyFinding``): here
over one trace (its steps' NCCL kernels), and in ``multi/rank_rules/comm_heavy.py`` over every
rank of a multi-process run (``RankSummary.comm_us``, which also counts a CPU backend's
collectives such as gloo's). A single-trace report only ever holds the first; a cross-rank
report holds the second, naming the rank with the largest share.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import compress, repeat
from operator import gt, itemgetter, not_

from ..formatting import format_duration, format_share
from ..index.columns import ByName, is_comm_kernel
from ..index.context import Context
from ..index.intervals import Timeline
from ..measure.stages import Metrics
from ..results import Finding
from ..verdict.findings import CommHeavyFinding
from ._common import distinct_names, picker
from .base import Rule

_END = itemgetter(1)
_NAME = itemgetter(2)


class _Compute:
    """The union of the compute (not communication) kernels, built only where it is asked
    about. On one device, a union of kernels never crosses an idle gap of the device's
    timeline, so the compute kernels starting inside the device's busy stretches that cover
    ``[a, b]`` make exactly the compute stretches the whole union has there: the
    communication of a step usually covers a small part of it."""

    def __init__(self, ctx: Context, is_comm: list[bool]) -> None:
        self.kernels = ctx.trace.kernels
        self.starts = ctx.starts(self.kernels)
        self.is_comm = is_comm
        devices = {t.device for t in ctx.trace.tracks if t.device >= 0}
        self.device = ctx.timelines.get(devices.pop()) if len(devices) == 1 else None
        self.whole: Timeline | None = None

    def _of(self, lo: int, hi: int) -> Timeline:
        """The union of the compute kernels among ``kernels[lo:hi]``."""
        pick = picker(list(compress(range(lo, hi), map(not_, self.is_comm[lo:hi]))))
        return Timeline.from_columns(list(pick(self.starts)), list(map(_END, pick(self.kernels))))

    def around(self, a: float, b: float) -> Timeline:
        """A union equal to the whole one inside ``[a, b]`` (both ends in busy stretches of
        the only device; else the whole union)."""
        tl = self.device
        if tl is not None:
            first = bisect_right(tl.starts, a) - 1  # the stretch holding a
            last = bisect_left(tl.ends, b)  # the stretch holding b
            if first >= 0 and tl.ends[first] >= a and last < len(tl) and tl.starts[last] <= b:
                lo = bisect_left(self.starts, tl.starts[first])
                return self._of(lo, bisect_right(self.starts, tl.ends[last], lo))
        if self.whole is None:
            self.whole = self._of(0, len(self.kernels))
        return self.whole


class CommHeavy(CommHeavyFinding, Rule):
    """Communication share of the step (id, words and thresholds: ``CommHeavyFinding``)."""

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if any(s.comm_us > 0 for s in measured.steps):
            return None  # the step metrics saw communication kernels: no need to look
        if not any(map(is_comm_kernel, distinct_names(ctx, ctx.trace.kernels))):
            return "no communication (NCCL) kernels in the trace"
        return None

    def _per_step(self, ctx: Context) -> tuple[list[float], list[float]]:
        """Per step (CPU window), the union of its communication kernels and the part of it
        not overlapped with compute kernels."""
        kernels = ctx.trace.kernels
        is_comm = list(map(ByName(is_comm_kernel).__getitem__, map(_NAME, kernels)))
        pick = picker(list(compress(range(len(kernels)), is_comm)))  # kernels sorted by start
        comm_tl = Timeline.from_columns(
            list(pick(ctx.starts(kernels))), list(map(_END, pick(kernels)))
        )
        compute = _Compute(ctx, is_comm)
        comm: list[float] = []
        exposed: list[float] = []
        for step in ctx.steps:
            c = comm_tl.busy(step.start, step.end)
            # The communication stretches overlapping the step (b > start and a < end),
            # clipped to it; only those with compute inside add to the overlap (the others
            # add 0.0), found in C: compute starts before b and ends after a.
            first = bisect_right(comm_tl.ends, step.start)
            last = bisect_left(comm_tl.starts, step.end, first)
            lo, hi = comm_tl.starts[first:last], comm_tl.ends[first:last]
            overlap = 0.0
            if lo:  # stretches are disjoint: only the first and the last can stick out
                lo[0] = max(lo[0], step.start)
                hi[-1] = min(hi[-1], step.end)
                compute_tl = compute.around(lo[0], hi[-1])
                shared = map(
                    gt,
                    map(bisect_left, repeat(compute_tl.starts), hi),
                    map(bisect_right, repeat(compute_tl.ends), lo),
                )
                for a, b in compress(zip(lo, hi), shared):
                    overlap += compute_tl.busy(a, b)
            comm.append(c)
            exposed.append(max(0.0, c - overlap))
        return comm, exposed

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        comm, exposed = self._per_step(ctx)
        walls = [s.wall_us for s in ctx.steps]
        wall = sum(walls)
        # all steps' totals, so communication and its exposed part come from the same steps
        if wall <= 0 or sum(comm) / wall < self.SHARE:
            return []
        n = len(walls)
        comm_share, exposed_share = sum(comm) / wall, sum(exposed) / wall
        c, e = sum(comm) / n, sum(exposed) / n  # per step: the all-steps totals over n
        shares = [x / w for x, w in zip(exposed, walls) if w > 0]
        low, high = format_share(min(shares)), format_share(max(shares))
        spread = "" if low == high else f", {low}–{high} per step"
        steps, time = ("the step", "the step") if n == 1 else ("the steps", "the steps' time")
        return [
            self.finding(
                f"NCCL communication takes {format_share(comm_share)} of {time} "
                f"({format_duration(c)} per step), {format_duration(e)} of it "
                f"({format_share(exposed_share)} of {steps}{spread}) not overlapped with "
                "compute: tune DDP bucket_cap_mb, accumulate gradients under no_sync(), or "
                "look for a slow rank",
                e,
                severity="warning" if exposed_share >= self.WARNING_EXPOSED else "information",
                comm_share=comm_share,
                exposed_share=exposed_share,
                comm_us=c,
                exposed_us=e,
                exposed_share_min=min(shares),
                exposed_share_max=max(shares),
            )
        ]


RULE = CommHeavy()
