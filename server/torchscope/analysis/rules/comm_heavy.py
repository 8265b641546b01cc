"""``comm-heavy``: collective communication takes more than 10 % of the step.

HolisticTraceAnalysis' temporal and communication-computation overlap breakdowns: NCCL kernels
above 10 % of a step are worth a look, and what hurts is the part not overlapped with compute
(exposed communication). Remedies: DDP bucket sizes (``bucket_cap_mb``), gradient
accumulation with ``no_sync()``, overlapping optimizer work, or finding the straggler rank.
"""

from __future__ import annotations

from itertools import compress

from ..context import Context
from ..formatting import format_duration, format_share
from ..intervals import Timeline
from ..metrics import is_comm_kernel, median
from ..report import Finding
from .base import Rule

COMM_HEAVY_SHARE = 0.10
"""Communication ≥ 10 % of the step (DESIGN.md §3; HTA's comm/compute overlap analysis)."""

COMM_WARNING_EXPOSED = 0.10
"""Exposed (not overlapped) communication ≥ 10 % of the step turns it into a warning."""


class CommHeavy(Rule):
    """Communication share of the step."""

    id = "comm-heavy"
    title = "Communication takes a large share of the step"
    severity = "information"
    source = "HolisticTraceAnalysis communication/computation overlap; DESIGN.md §3"

    def skip(self, ctx: Context) -> str | None:
        if not any(is_comm_kernel(k.name) for k in ctx.trace.kernels):
            return "no communication (NCCL) kernels in the trace"
        return None

    def match(self, ctx: Context) -> list[Finding]:
        trace = ctx.trace
        names = [k.name for k in trace.kernels]
        flags = {name: is_comm_kernel(name) for name in set(names)}
        is_comm = list(map(flags.__getitem__, names))
        pairs = [(k.start, k.end) for k in trace.kernels]
        comm_iv = list(compress(pairs, is_comm))
        compute_iv = list(compress(pairs, [not c for c in is_comm]))
        comm_tl = Timeline(comm_iv)
        compute_tl = Timeline(compute_iv)
        comm: list[float] = []
        exposed: list[float] = []
        for step in ctx.steps:
            c = comm_tl.busy(step.start, step.end)
            overlap = 0.0
            for a, b in zip(comm_tl.starts, comm_tl.ends):
                if b > step.start and a < step.end:
                    overlap += compute_tl.busy(max(a, step.start), min(b, step.end))
            comm.append(c)
            exposed.append(max(0.0, c - overlap))
        wall = median([s.wall_us for s in ctx.step_metrics])
        c, e = median(comm), median(exposed)
        if wall <= 0 or c / wall < COMM_HEAVY_SHARE:
            return []
        return [
            self.finding(
                f"NCCL communication takes {format_share(c / wall)} of each step "
                f"({format_duration(c)}), "
                f"{format_duration(e)} of it ({format_share(e / wall)} of the step) not "
                "overlapped with "
                "compute: tune DDP bucket_cap_mb, accumulate gradients under no_sync(), or "
                "look for a slow rank",
                e,
                severity="warning" if e / wall >= COMM_WARNING_EXPOSED else "information",
                comm_share=c / wall,
                exposed_share=e / wall,
                comm_us=c,
                exposed_us=e,
            )
        ]


RULE = CommHeavy()
